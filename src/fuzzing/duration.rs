//! Go durations (`sequencingTTL`, `1h2m3.5s`), parsed as Go's
//! `time.ParseDuration` does.
//!
//! A duration that parses prints (as Go's `Duration.String`) to text that
//! parses to the same nanoseconds, and splits into seconds and nanoseconds
//! that add up to it, both of its sign.

use crate::go::duration::{parse_go_duration, to_seconds_nanos};

/// The target's body.
pub fn duration(data: &[u8]) {
    let Some(text) = super::text(data) else {
        return;
    };
    let Ok(nanos) = parse_go_duration(text) else {
        return;
    };
    let printed = go_string(nanos);
    assert_eq!(
        parse_go_duration(&printed).ok(),
        Some(nanos),
        "{text:?} is {nanos} ns, printed as {printed:?}"
    );
    let (seconds, rest) = to_seconds_nanos(nanos);
    assert_eq!(
        i128::from(seconds) * 1_000_000_000 + i128::from(rest),
        i128::from(nanos),
        "{nanos} ns split as {seconds} s and {rest} ns"
    );
    assert!(
        rest.abs() < 1_000_000_000 && (seconds == 0 || rest == 0 || (seconds < 0) == (rest < 0))
    );
}

/// Go's `time.Duration.String`: `1h2m3.5s`, `1.5ms`, `0s`.
pub fn go_string(nanos: i64) -> String {
    const SECOND: u64 = 1_000_000_000;
    if nanos == 0 {
        return "0s".to_owned();
    }
    let sign = if nanos < 0 { "-" } else { "" };
    let u = nanos.unsigned_abs();
    if u < SECOND {
        let (unit, digits) = match u {
            0..1_000 => ("ns", 0),
            1_000..1_000_000 => ("µs", 3),
            _ => ("ms", 6),
        };
        return format!("{sign}{}{unit}", decimal(u, digits));
    }
    let seconds = format!("{}s", decimal(u % (60 * SECOND), 9));
    let minutes = u / (60 * SECOND);
    match (minutes / 60, minutes % 60) {
        (0, 0) => format!("{sign}{seconds}"),
        (0, m) => format!("{sign}{m}m{seconds}"),
        (h, m) => format!("{sign}{h}h{m}m{seconds}"),
    }
}

/// `v` divided by 10^`digits`, without trailing zeros after the point.
fn decimal(v: u64, digits: u32) -> String {
    let unit = 10u64.pow(digits);
    let (whole, fraction) = (v / unit, v % unit);
    if fraction == 0 {
        return whole.to_string();
    }
    let fraction = format!("{fraction:0width$}", width = digits as usize);
    format!("{whole}.{}", fraction.trim_end_matches('0'))
}
