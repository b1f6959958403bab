//! Positions in the rewritten text mapped back to the user's source.

/// One piece of an output line: output columns from `out_col` on come from
/// the original position (`line`, `col`). A `fixed` segment is synthetic text
/// and all of its columns map to that single original position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Segment {
    pub(crate) out_col: usize,
    pub(crate) line: usize,
    pub(crate) col: usize,
    pub(crate) fixed: bool,
}

/// Maps positions in the rewritten text back to the original source.
///
/// Lines and columns are 0-based; columns count characters (Unicode scalar
/// values). An empty map (the default) is the identity.
#[derive(Debug, Clone, Default)]
pub struct LineMap {
    /// Segments of every output line, sorted by output column. Empty for the
    /// identity map.
    pub(crate) lines: Vec<Vec<Segment>>,
    /// The source's last line (0-based).
    pub(crate) last_line: usize,
}

impl LineMap {
    /// Maps a 0-based (line, column) in the rewritten text to the 0-based
    /// (line, column) in the original source.
    ///
    /// Inserted lines map to the line of the `while` they came from. Columns
    /// are exact for unchanged text, for text after tab expansion and for
    /// text after renamed identifiers; synthetic text maps to the position of
    /// the construct it replaced.
    #[must_use]
    pub fn original(&self, line: usize, column: usize) -> (usize, usize) {
        let Some(last_index) = self.lines.len().checked_sub(1) else {
            return (line, column);
        };
        let Some(segments) = self.lines.get(line) else {
            // Past the end of the rewritten text: extrapolate from the last line.
            let (last_line, _) = self.original(last_index, 0);
            return (last_line + (line - last_index), column);
        };
        let after = segments.partition_point(|s| s.out_col <= column);
        let segment = match after.checked_sub(1) {
            Some(index) => segments.get(index),
            None => segments.first(),
        };
        match segment {
            // A line with nothing from the source on it: the end of the text
            // after a `while` whose guard added a line. It is the line after
            // the last one that maps (not its own number), within the source.
            None => match self.lines[..line].iter().rposition(|s| !s.is_empty()) {
                Some(mapped) => (
                    (self.original(mapped, 0).0 + (line - mapped)).min(self.last_line),
                    column,
                ),
                None => (line, column),
            },
            Some(s) if s.fixed => (s.line, s.col),
            Some(s) => (s.line, s.col + column.saturating_sub(s.out_col)),
        }
    }

    /// True when the source needed no rewriting at all (then `text == source`).
    #[must_use]
    pub fn is_identity(&self) -> bool {
        self.lines.is_empty()
    }
}
