//! Which characters Go prints as they are (`strconv.IsPrint`).

/// Go's `strconv.IsPrint`: letters, marks, numbers, punctuation, symbols
/// and the ASCII space, by the table `tools/goprint` takes from Go.
pub fn is_go_print(c: char) -> bool {
    use std::cmp::Ordering;
    let u = u32::from(c);
    if u < 0x80 {
        return (0x20..0x7f).contains(&u);
    }
    super::print_table::GO_PRINT
        .binary_search_by(|&(first, last)| {
            if last < u {
                Ordering::Less
            } else if first > u {
                Ordering::Greater
            } else {
                Ordering::Equal
            }
        })
        .is_ok()
}
