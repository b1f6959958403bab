//! Spelling suggestions, as go.starlark.net's `spell` package makes them.

/// go.starlark.net's `spell.Nearest`: the candidate within half the
/// length of `x` in edit distance (ignoring case and underscores), if any.
pub fn nearest(x: &str, candidates: &[&str]) -> Option<String> {
    fn fold(s: &str) -> Vec<u8> {
        s.chars()
            .filter(|c| *c != '_')
            .map(|c| c.to_lowercase().next().unwrap_or(c))
            .collect::<String>()
            .into_bytes()
    }
    let x = fold(x);
    let mut best = None;
    let mut best_d = x.len().div_ceil(2);
    for c in candidates {
        let d = levenshtein(&x, &fold(c), best_d);
        if d < best_d {
            best_d = d;
            best = Some((*c).to_owned());
        }
    }
    best
}

/// go.starlark.net's bounded Levenshtein distance, quirks included.
fn levenshtein(first: &[u8], second: &[u8], max: usize) -> usize {
    let (mut short, mut long) = if first.len() > second.len() {
        (second, first)
    } else {
        (first, second)
    };
    if let Some(at) = (0..short.len()).find(|&at| short[at] != long[at]) {
        short = &short[at..];
        long = &long[at..];
    }
    if short.is_empty() {
        return long.len();
    }
    let diff = long.len().abs_diff(short.len());
    if diff > max {
        return diff;
    }
    let mut row: Vec<usize> = (0..=long.len()).collect();
    for i in 1..=short.len() {
        row[0] = i;
        let mut best = i;
        let mut prev = i - 1;
        for j in 1..=long.len() {
            let substitution = prev + usize::from(short[i - 1] != long[j - 1]);
            let deletion = 1 + row[j - 1];
            let insertion = 1 + row[j];
            let cost = substitution.min(deletion).min(insertion);
            prev = row[j];
            row[j] = cost;
            best = best.min(cost);
        }
        if best > max {
            return best;
        }
    }
    row[long.len()]
}
