//! The median, one definition for every figure that takes one (a trend's slope and intercept, a
//! growth's reference level, a point's repeats): the middle value, or the mean of the two middle values
//! of an even count. NaN sorts last (`total_cmp`); the callers leave non-finite values out first.

/// The median of `values` (None when empty).
pub fn median(values: &[f64]) -> Option<f64> {
    let mut v = values.to_vec();
    median_in_place(&mut v)
}

/// The median, reordering `v` (no copy: Theil–Sen takes it over every pair of points).
pub fn median_in_place(v: &mut [f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    let mid = v.len() / 2;
    let (_, m, _) = v.select_nth_unstable_by(mid, f64::total_cmp);
    let m = *m;
    if v.len() % 2 == 1 {
        return Some(m);
    }
    // The other middle value is the largest of the lower half.
    let lower = v[..mid].iter().copied().fold(f64::NEG_INFINITY, f64::max);
    Some((lower + m) / 2.0)
}

#[cfg(test)]
mod tests {
    use super::median;

    #[test]
    fn the_middle_value_or_the_mean_of_the_two() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[5.0]), Some(5.0));
    }
}
