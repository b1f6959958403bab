//! Where two texts part: the first differing line, with a line of context
//! on each side, as `-` (expected) and `+` (got) lines.

/// `None` when the texts are equal.
pub fn first_difference(want: &str, got: &str) -> Option<String> {
    if want == got {
        return None;
    }
    let (w, g): (Vec<&str>, Vec<&str>) = (want.lines().collect(), got.lines().collect());
    let at = w
        .iter()
        .zip(&g)
        .position(|(a, b)| a != b)
        .unwrap_or(w.len().min(g.len()));
    let mut out = Vec::new();
    if at > 0 {
        out.push(format!("  line {}:  {}", at, w[at - 1]));
    }
    let missing = "(end of text)";
    out.push(format!(
        "- line {}: {}",
        at + 1,
        w.get(at).unwrap_or(&missing)
    ));
    out.push(format!(
        "+ line {}: {}",
        at + 1,
        g.get(at).unwrap_or(&missing)
    ));
    Some(out.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::first_difference;

    #[test]
    fn the_first_differing_line_is_shown_both_ways() {
        assert_eq!(first_difference("a\nb\n", "a\nb\n"), None);
        assert_eq!(
            first_difference("a\nb\nc\n", "a\nx\nc\n").unwrap(),
            "  line 1:  a\n- line 2: b\n+ line 2: x"
        );
        assert_eq!(
            first_difference("a\n", "a\nmore\n").unwrap(),
            "  line 1:  a\n- line 2: (end of text)\n+ line 2: more"
        );
    }
}
