//! The one reader of durations, sizes, counts and decimals, for every flag, every exectl.yaml field and
//! the compose healthchecks exectl reads back. Checked arithmetic only: an absurd value is an `Invalid`,
//! never an overflow or a panic. The caller turns `Invalid` into its UsageError (it knows the field).
//!
//! Durations: one or more `<number><unit>` parts, such as `30s`, `500ms`, `1m30s`, `1.5h`, `7d`; units
//! `ns`, `us`, `ms`, `s`, `m`, `h`, `d`. A bare number is refused (is `300` seconds or milliseconds?),
//! except `0`, which is zero in any unit — the rule of Go's and compose's durations.
//!
//! Timestamps: Docker's RFC 3339 (`parse_rfc3339`), read to whole seconds since the epoch.

use std::fmt;
use std::time::Duration;

/// Why a value was refused, and what to write instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid {
    pub problem: String,
    pub fix: String,
}

impl Invalid {
    pub fn new(problem: impl Into<String>, fix: impl Into<String>) -> Self {
        Invalid {
            problem: problem.into(),
            fix: fix.into(),
        }
    }
}

impl fmt::Display for Invalid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}; fix: {}", self.problem, self.fix)
    }
}

const DURATION_FIX: &str = "write a number and a unit (ms, s, m, h, d), e.g. 30s, 500ms or 1m30s";

const NS_PER: [(&str, u128); 7] = [
    ("ns", 1),
    ("us", 1_000),
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
    ("m", 60 * 1_000_000_000),
    ("h", 3_600 * 1_000_000_000),
    ("d", 86_400 * 1_000_000_000),
];

/// `int.frac` × `scale` / `per`, checked: the digits of a number as text, so that no float rounds and
/// no multiplication wraps. None when the number is not digits[.digits] or the result overflows u128.
fn scaled(number: &str, scale: u128) -> Option<u128> {
    let (int, frac) = number.split_once('.').unwrap_or((number, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if (int.is_empty() && frac.is_empty()) || !digits(int) || !digits(frac) || frac.len() > 18 {
        return None;
    }
    let whole = if int.is_empty() {
        0
    } else {
        int.parse::<u128>().ok()?.checked_mul(scale)?
    };
    let part = if frac.is_empty() {
        0
    } else {
        // frac < 10^18 and scale ≤ 8.64·10^13: the product fits u128.
        frac.parse::<u128>().ok()? * scale / 10u128.pow(frac.len() as u32)
    };
    whole.checked_add(part)
}

/// Why a duration text was refused, before the caller's range is known.
enum Bad {
    NotDuration,
    NoUnit,
    TooLong,
}

fn parse_duration(s: &str) -> Result<Duration, Bad> {
    if s == "0" {
        return Ok(Duration::ZERO);
    }
    if s.is_empty() {
        return Err(Bad::NotDuration);
    }
    if scaled(s, 1).is_some() {
        return Err(Bad::NoUnit);
    }
    let mut total: u128 = 0;
    let mut rest = s;
    while !rest.is_empty() {
        let num_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (number, tail) = rest.split_at(num_end);
        let unit_end = tail
            .find(|c: char| !c.is_ascii_alphabetic())
            .unwrap_or(tail.len());
        let (unit, tail) = tail.split_at(unit_end);
        let scale = NS_PER
            .iter()
            .find(|(u, _)| *u == unit)
            .map(|(_, ns)| *ns)
            .ok_or(Bad::NotDuration)?;
        if number.is_empty() {
            return Err(Bad::NotDuration);
        }
        // A number that is digits but does not fit is too long; anything else is not a duration.
        let ns = scaled(number, scale).ok_or(if number.bytes().all(|b| b.is_ascii_digit()) {
            Bad::TooLong
        } else {
            Bad::NotDuration
        })?;
        total = total.checked_add(ns).ok_or(Bad::TooLong)?;
        rest = tail;
    }
    u64::try_from(total)
        .map(Duration::from_nanos)
        .map_err(|_| Bad::TooLong)
}

fn refused(text: &str, bad: Bad) -> Invalid {
    match bad {
        Bad::NotDuration => Invalid::new("not a duration", DURATION_FIX),
        Bad::NoUnit => Invalid::new(
            "a duration needs a unit",
            format!("write e.g. {text}s or {text}ms"),
        ),
        Bad::TooLong => Invalid::new("out of range: too long", DURATION_FIX),
    }
}

/// A duration in the grammar above, at most ~584 years (what fits u64 nanoseconds).
pub fn duration(text: &str) -> Result<Duration, Invalid> {
    let s = text.trim();
    parse_duration(s).map_err(|b| refused(s, b))
}

/// A duration within `min..=max`.
pub fn duration_in(text: &str, min: Duration, max: Duration) -> Result<Duration, Invalid> {
    let s = text.trim();
    let out_of_range = || {
        Invalid::new(
            format!("out of range {}..={}", show(min), show(max)),
            format!("pass a duration from {} to {}", show(min), show(max)),
        )
    };
    match parse_duration(s) {
        Ok(d) if d < min || d > max => Err(out_of_range()),
        Ok(d) => Ok(d),
        Err(Bad::TooLong) => Err(out_of_range()),
        Err(b) => Err(refused(s, b)),
    }
}

/// A duration as this grammar writes it: the largest units first, e.g. `1m30s`, `500ms`, `7d`.
pub fn show(d: Duration) -> String {
    if d.is_zero() {
        return "0s".into();
    }
    let mut ns = d.as_nanos();
    let mut out = String::new();
    for (unit, per) in NS_PER.iter().rev() {
        if ns >= *per {
            out.push_str(&format!("{}{unit}", ns / per));
            ns %= per;
        }
    }
    out
}

/// A duration for people to read: `0 s`, `250 ms`, `1.5 s`, `10 s`, `1 min 30 s`, `2 h 5 min` (never
/// Debug's `0ns` or `1.5s`).
pub fn readable(d: Duration) -> String {
    let ms = d.as_secs_f64() * 1000.0;
    let trim = |x: f64, places: usize| {
        let t = format!("{x:.places$}");
        match t.contains('.') {
            true => t.trim_end_matches('0').trim_end_matches('.').to_string(),
            false => t,
        }
    };
    if d.is_zero() {
        "0 s".into()
    } else if ms < 1.0 {
        format!("{} µs", trim(ms * 1000.0, 0))
    } else if ms < 1000.0 {
        format!("{} ms", trim(ms, 1))
    } else if d < Duration::from_secs(60) {
        format!("{} s", trim(ms / 1000.0, 2))
    } else {
        let s = d.as_secs_f64().round() as u64;
        let (h, m, s) = (s / 3600, s % 3600 / 60, s % 60);
        match (h, m, s) {
            (0, m, 0) => format!("{m} min"),
            (0, m, s) => format!("{m} min {s} s"),
            (h, 0, _) => format!("{h} h"),
            (h, m, _) => format!("{h} h {m} min"),
        }
    }
}

/// `readable` of a number of seconds (a figure's `_s`): negative or NaN as 0 s.
pub fn readable_s(s: f64) -> String {
    readable(Duration::try_from_secs_f64(s.max(0.0)).unwrap_or(Duration::MAX))
}

/// Whole seconds of a duration within `min..=max` (for settings rendered as `Ns`).
pub fn whole_seconds_in(text: &str, min: Duration, max: Duration) -> Result<u64, Invalid> {
    let d = duration_in(text, min, max)?;
    if d.subsec_nanos() != 0 {
        return Err(Invalid::new(
            "not a whole number of seconds",
            format!("pass whole seconds, e.g. {}s", d.as_secs().max(1)),
        ));
    }
    Ok(d.as_secs())
}

/// A size in its shortest exact form (`512m` for 536870912), as `size` reads it back: two spellings of
/// one size render one configuration.
pub fn show_size(bytes: u64) -> String {
    for (unit, per) in [("g", 1u64 << 30), ("m", 1 << 20), ("k", 1 << 10)] {
        if bytes >= per && bytes.is_multiple_of(per) {
            return format!("{}{unit}", bytes / per);
        }
    }
    bytes.to_string()
}

/// Bytes of a size such as `512m`, `1.5g`, `64k`, `100b` or a plain number of bytes (k, m, g are
/// powers of 1024, as Docker reads them; case does not matter). At least one byte, at most i64::MAX (the
/// engine's type), checked.
pub fn size(text: &str) -> Result<u64, Invalid> {
    let fix = "write a size such as 512m, 1.5g or 64k";
    let v = text.trim().to_ascii_lowercase();
    let (num, mult) = match v.chars().last() {
        Some('k') => (&v[..v.len() - 1], 1u128 << 10),
        Some('m') => (&v[..v.len() - 1], 1 << 20),
        Some('g') => (&v[..v.len() - 1], 1 << 30),
        Some('b') => (&v[..v.len() - 1], 1),
        _ => (v.as_str(), 1),
    };
    let digits = !num.is_empty() && num.bytes().all(|b| b.is_ascii_digit() || b == b'.');
    let bytes = scaled(num, mult).ok_or_else(|| {
        if digits && !num.contains('.') {
            Invalid::new("out of range: too large", fix)
        } else {
            Invalid::new("not a size", fix)
        }
    })?;
    match u64::try_from(bytes) {
        Ok(0) => Err(Invalid::new("a size of zero", fix)),
        Ok(b) if b <= i64::MAX as u64 => Ok(b),
        _ => Err(Invalid::new(
            "out of range: larger than the engine's limit (2^63-1 bytes)",
            fix,
        )),
    }
}

/// A size of at least `min` bytes; `min_text` is how that size is written (e.g. `6m`).
pub fn size_at_least(text: &str, min: u64, min_text: &str) -> Result<u64, Invalid> {
    let b = size(text)?;
    if b < min {
        return Err(Invalid::new(
            format!("below {min_text}"),
            format!("pass a size of at least {min_text}, such as 512m or 2g"),
        ));
    }
    Ok(b)
}

/// A whole number within `min..=max` (`_` may separate digits, as in 10_000).
pub fn count_in(text: &str, min: u64, max: u64) -> Result<u64, Invalid> {
    let t = text.trim();
    let fix = format!("pass a whole number from {min} to {max}");
    let ok = !t.is_empty()
        && !t.starts_with('_')
        && !t.ends_with('_')
        && t.bytes().all(|b| b.is_ascii_digit() || b == b'_');
    if !ok {
        return Err(Invalid::new("not a whole number", fix));
    }
    match t.replace('_', "").parse::<u64>() {
        Ok(n) if (min..=max).contains(&n) => Ok(n),
        _ => Err(Invalid::new(format!("out of range {min}..={max}"), fix)),
    }
}

/// A decimal number within `min..=max` (NaN and the infinities are out of every range).
pub fn decimal_in(text: &str, min: f64, max: f64) -> Result<f64, Invalid> {
    let fix = format!("pass a number from {min} to {max}");
    let v: f64 = text
        .trim()
        .parse()
        .map_err(|_| Invalid::new("not a number", fix.clone()))?;
    if !(min..=max).contains(&v) {
        return Err(Invalid::new(format!("out of range {min}..={max}"), fix));
    }
    Ok(v)
}

/// Seconds since the epoch of Docker's timestamps (`2026-11-29T20:01:02.123456789Z`: container start
/// times, the engine's clock, log lines); the fraction is dropped. None when it is not one.
pub fn parse_rfc3339(t: &str) -> Option<u64> {
    let (date, time) = t.split_once('T')?;
    let mut d = date.split('-').map(|x| x.parse::<i64>().ok());
    let (y, m, day) = (d.next()??, d.next()??, d.next()??);
    let time = time.trim_end_matches('Z');
    let time = time.split(['+', '.']).next()?;
    let mut h = time.split(':').map(|x| x.parse::<i64>().ok());
    let (hh, mm, ss) = (h.next()??, h.next()??, h.next()??);
    // In range, so that no arithmetic below can overflow.
    let fields = [
        (y, 0, 9999),
        (m, 1, 12),
        (day, 1, 31),
        (hh, 0, 23),
        (mm, 0, 59),
        (ss, 0, 60),
    ];
    if fields.iter().any(|(v, lo, hi)| v < lo || v > hi) {
        return None;
    }
    // days from civil (Howard Hinnant)
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    u64::try_from(days * 86_400 + hh * 3600 + mm * 60 + ss).ok()
}

/// Seconds since the epoch as `YYYY-MM-DD HH:MM:SS UTC` (civil from days, Howard Hinnant's).
pub fn show_utc(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    #[test]
    fn durations() {
        let d = |s| duration(s).ok();
        assert_eq!(d("30s"), Some(Duration::from_secs(30)));
        assert_eq!(d("500ms"), Some(Duration::from_millis(500)));
        assert_eq!(d("2m"), Some(Duration::from_secs(120)));
        assert_eq!(d("1m30s"), Some(Duration::from_secs(90)));
        assert_eq!(d("1h"), Some(Duration::from_secs(3600)));
        assert_eq!(d("7d"), Some(Duration::from_secs(7 * 86_400)));
        assert_eq!(d("1h30m"), Some(Duration::from_secs(5400)));
        assert_eq!(d("0.5s"), Some(Duration::from_millis(500)));
        assert_eq!(d(".5s"), Some(Duration::from_millis(500)));
        assert_eq!(d("1.5h"), Some(Duration::from_secs(5400)));
        assert_eq!(d("250us"), Some(Duration::from_micros(250)));
        assert_eq!(d(" 30s "), Some(Duration::from_secs(30)));
        assert_eq!(d("0"), Some(Duration::ZERO));
        assert_eq!(d("0s"), Some(Duration::ZERO));
    }

    #[test]
    fn bad_durations_are_refused_not_panics() {
        for bad in [
            "",
            "-1",
            "-1s",
            "5x",
            "s",
            "1.2.3s",
            "ms5",
            "1e30",
            "NaN",
            "inf",
            "1 s",
            "5",
            "45",
            "0.5",
            "300",
            "18446744073709551616",
            "1s-",
            "1ss",
            "1S",
        ] {
            assert!(duration(bad).is_err(), "{bad:?}");
        }
        let e = duration("300").unwrap_err();
        assert!(e.problem.contains("unit") && e.fix.contains("300s"), "{e}");
        for huge in [
            "99999999999d",
            "99999999999999999999999999999999999999999s",
            "9223372036854775807s",
            "18446744073709551616ns",
            "213503d213503d213503d",
        ] {
            let e = duration(huge).unwrap_err();
            assert!(e.problem.starts_with("out of range"), "{huge}: {e}");
        }
    }

    #[test]
    fn ranges() {
        assert!(duration_in("0s", S, 60 * S).is_err());
        assert!(duration_in("61s", S, 60 * S).is_err());
        let e = duration_in("2h", S, 60 * S).unwrap_err();
        assert_eq!(e.problem, "out of range 1s..=1m");
        assert_eq!(e.fix, "pass a duration from 1s to 1m");
        let e = duration_in("99999999999999999999999d", S, 60 * S).unwrap_err();
        assert_eq!(e.problem, "out of range 1s..=1m");
        let e = duration("1e30").unwrap_err();
        assert_eq!(e.problem, "not a duration");
        assert_eq!(duration_in("1m", S, 60 * S), Ok(60 * S));
        assert_eq!(whole_seconds_in("30s", S, 3600 * S), Ok(30));
        assert!(whole_seconds_in("1.5s", S, 3600 * S).is_err());
    }

    #[test]
    fn readable_durations() {
        let r = |ms: u64| readable(Duration::from_millis(ms));
        assert_eq!(r(0), "0 s");
        assert_eq!(readable(Duration::from_micros(300)), "300 µs");
        assert_eq!(r(250), "250 ms");
        assert_eq!(readable(Duration::from_micros(2_500)), "2.5 ms");
        assert_eq!(r(1_000), "1 s");
        assert_eq!(r(1_500), "1.5 s");
        assert_eq!(r(10_000), "10 s");
        assert_eq!(r(60_000), "1 min");
        assert_eq!(r(90_000), "1 min 30 s");
        assert_eq!(r(3_600_000), "1 h");
        assert_eq!(r(7_500_000), "2 h 5 min");
        assert_eq!(readable_s(4.9), "4.9 s");
        assert_eq!(readable_s(362.4), "6 min 2 s");
        assert_eq!(readable_s(-1.0), "0 s");
        assert_eq!(readable_s(f64::NAN), "0 s");
    }

    #[test]
    fn show_reads_back() {
        for t in ["1m30s", "500ms", "7d", "1h1m1s1ms", "0s", "3us", "1d1ns"] {
            assert_eq!(show(duration(t).unwrap()), t);
        }
    }

    #[test]
    fn sizes_shown_read_back() {
        for (b, text) in [
            (536870912, "512m"),
            (3 << 29, "1536m"),
            (2 << 30, "2g"),
            (1000, "1000"),
        ] {
            assert_eq!(show_size(b), text);
            assert_eq!(size(text), Ok(b));
        }
    }

    #[test]
    fn sizes() {
        assert_eq!(size("512m"), Ok(512 << 20));
        assert_eq!(size("2G"), Ok(2 << 30));
        assert_eq!(size("1.5g"), Ok(3 << 29));
        assert_eq!(size("64k"), Ok(64 << 10));
        assert_eq!(size("100b"), Ok(100));
        assert_eq!(size("4096"), Ok(4096));
        assert_eq!(size("8388607t").ok(), None);
        for bad in [
            "", "0", "0m", "-1m", "abc", "1e9", "m", "NaN", "inf", "1.2.3m",
        ] {
            assert!(size(bad).is_err(), "{bad:?}");
        }
        for huge in ["99999999999999999999", "9223372036854775808", "8589934592g"] {
            assert!(
                size(huge).unwrap_err().problem.starts_with("out of range"),
                "{huge}"
            );
        }
        assert_eq!(size("9223372036854775807"), Ok(i64::MAX as u64));
        assert!(size_at_least("5m", 6 << 20, "6m").is_err());
        assert_eq!(size_at_least("6m", 6 << 20, "6m"), Ok(6 << 20));
    }

    #[test]
    fn counts_and_decimals() {
        assert_eq!(count_in("10_000", 1, 20_000), Ok(10_000));
        assert_eq!(count_in(" 4 ", 1, 64), Ok(4));
        for bad in [
            "",
            "0",
            "65",
            "-1",
            "1e3",
            "_1",
            "1_",
            "4.0",
            "18446744073709551616",
            "+",
        ] {
            assert!(count_in(bad, 1, 64).is_err(), "{bad:?}");
        }
        assert_eq!(decimal_in("1.5", 0.01, 1024.0), Ok(1.5));
        for bad in ["1e-10", "NaN", "inf", "-inf", "1025", "abc", "1e30"] {
            assert!(decimal_in(bad, 0.01, 1024.0).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn rfc3339() {
        assert_eq!(parse_rfc3339("2026-11-18T11:06:40.5Z"), Some(1_795_000_000));
        assert_eq!(parse_rfc3339("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(parse_rfc3339("garbage"), None);
        assert_eq!(parse_rfc3339("9223372036854775807-01-01T00:00:00Z"), None);
    }
}
