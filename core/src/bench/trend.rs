//! Growth over time (#39, part 2): the slope of one resource's samples — an instance's RSS, open files,
//! connections or rooms — per hour, with its uncertainty, and whether it shows growth. The slope is
//! Theil–Sen's (the median of the slopes of every pair of points: a spike the sampler caught, a GC's
//! drop, moves it little where least squares follows them), the interval a bootstrap's (the points
//! resampled with replacement, the slope taken again, its 2.5th and 97.5th percentiles), seeded: the
//! same samples give the same interval. Growth is an interval that excludes zero with a slope above a
//! bound the caller sets (e.g. 1 % of the level's RSS an hour). Pure: points in, figures out.

use crate::median::median_in_place;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

/// Fewer points fit no trend.
pub const MIN_POINTS: usize = 3;
/// A longer series is thinned to this many points (block medians) before the pairs are taken (n²).
pub const MAX_POINTS: usize = 120;
/// Resamples of the bootstrap.
pub const RESAMPLES: usize = 200;

/// One series' trend: its slope and the slope's 95 % interval, per hour.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Trend {
    pub slope_per_h: f64,
    pub low_per_h: f64,
    pub high_per_h: f64,
    /// The fitted line's value at `first_s` (for drawing the fit).
    pub intercept: f64,
    /// The first (thinned) point's time, seconds on the points' clock.
    pub first_s: f64,
    /// The points it was fitted on (after thinning).
    pub points: usize,
    /// Seconds from the first point to the last (of the thinned series).
    pub span_s: f64,
}

impl Trend {
    /// A rise beyond the fit's noise: the slope's whole interval lies above zero (the growth
    /// objective's first condition, `growth::SeriesTrend::significant`).
    pub fn rises(&self) -> bool {
        self.low_per_h > 0.0
    }

    /// The fitted value at `x_s` seconds (on the points' own clock).
    pub fn at(&self, x_s: f64) -> f64 {
        self.intercept + self.slope_per_h / 3600.0 * (x_s - self.first_s)
    }
}

/// The trend of `points` (x: seconds, y: the resource), None below `MIN_POINTS` or when every x is the
/// same. `seed` fixes the bootstrap's draws.
pub fn trend(points: &[(f64, f64)], seed: u64) -> Option<Trend> {
    let thin = thinned(points);
    let (slope, intercept) = theil_sen(&thin)?;
    let mut rng = StdRng::seed_from_u64(seed);
    let mut slopes = Vec::with_capacity(RESAMPLES);
    let mut draw = Vec::with_capacity(thin.len());
    for _ in 0..RESAMPLES {
        draw.clear();
        draw.extend((0..thin.len()).map(|_| thin[rng.gen_range(0..thin.len())]));
        // A draw of one x only has no slope: it is left out.
        if let Some((s, _)) = theil_sen(&draw) {
            slopes.push(s);
        }
    }
    slopes.sort_by(f64::total_cmp);
    let pct = |p: f64| -> f64 {
        if slopes.is_empty() {
            return slope;
        }
        let i = ((slopes.len() - 1) as f64 * p).round() as usize;
        slopes[i]
    };
    let first = thin[0].0;
    Some(Trend {
        slope_per_h: slope * 3600.0,
        low_per_h: pct(0.025) * 3600.0,
        high_per_h: pct(0.975) * 3600.0,
        intercept: intercept + slope * first,
        first_s: first,
        points: thin.len(),
        span_s: thin[thin.len() - 1].0 - first,
    })
}

/// Theil–Sen: the median slope over every pair of points with distinct x, and the median of
/// y − slope·x as the intercept (at x = 0). None with fewer than `MIN_POINTS` or a single x.
pub fn theil_sen(points: &[(f64, f64)]) -> Option<(f64, f64)> {
    if points.len() < MIN_POINTS {
        return None;
    }
    let mut slopes = Vec::with_capacity(points.len() * (points.len() - 1) / 2);
    for (i, a) in points.iter().enumerate() {
        for b in &points[i + 1..] {
            let dx = b.0 - a.0;
            if dx != 0.0 {
                slopes.push((b.1 - a.1) / dx);
            }
        }
    }
    let slope = median_in_place(&mut slopes)?;
    let mut rest: Vec<f64> = points.iter().map(|(x, y)| y - slope * x).collect();
    Some((slope, median_in_place(&mut rest)?))
}

/// At most `MAX_POINTS`: a longer series cut into that many consecutive blocks, each the median of its
/// times and of its values (an even pick could alias with a periodic pattern, a GC's say; a block's
/// median keeps a spike out as the pairs' median does).
fn thinned(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    if points.len() <= MAX_POINTS {
        return points.to_vec();
    }
    let per = points.len() as f64 / MAX_POINTS as f64;
    (0..MAX_POINTS)
        .filter_map(|b| {
            let (from, to) = ((b as f64 * per) as usize, ((b + 1) as f64 * per) as usize);
            let block = &points[from..to.min(points.len())];
            let mut xs: Vec<f64> = block.iter().map(|p| p.0).collect();
            let mut ys: Vec<f64> = block.iter().map(|p| p.1).collect();
            Some((median_in_place(&mut xs)?, median_in_place(&mut ys)?))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fixed pseudo-random wobble in [-1, 1] (a hash of i: the tests' series are the same each run).
    fn wobble(i: usize) -> f64 {
        let h = (i as u64 ^ 0x9e37_79b9_7f4a_7c15)
            .wrapping_mul(6_364_136_223_846_793_005)
            .rotate_right(29);
        (h % 2001) as f64 / 1000.0 - 1.0
    }

    #[test]
    fn a_straight_line_gives_its_slope_per_hour_and_a_tight_interval() {
        let pts: Vec<(f64, f64)> = (0..100).map(|i| (i as f64, 3.0 + 2.0 * i as f64)).collect();
        let t = trend(&pts, 1).unwrap();
        assert!((t.slope_per_h - 7200.0).abs() < 1e-6, "{t:?}");
        assert!((t.low_per_h - 7200.0).abs() < 1e-6 && (t.high_per_h - 7200.0).abs() < 1e-6);
        assert!((t.intercept - 3.0).abs() < 1e-6, "{t:?}");
        assert!((t.at(50.0) - 103.0).abs() < 1e-6);
        assert!(t.rises());
    }

    #[test]
    fn a_flat_series_with_spikes_shows_no_growth() {
        // 1 MB of noise around 200 MB, and ten 50 MB spikes (a GC, a burst the sampler caught).
        let pts: Vec<(f64, f64)> = (0..300)
            .map(|i| {
                let spike = if i % 30 == 7 { 50.0 } else { 0.0 };
                (i as f64, 200.0 + wobble(i) + spike)
            })
            .collect();
        let t = trend(&pts, 7).unwrap();
        assert!(t.low_per_h <= 0.0 && t.high_per_h >= 0.0, "{t:?}");
        assert!(!t.rises(), "{t:?}");
    }

    #[test]
    fn spikes_move_theil_sen_little_where_least_squares_follows_them() {
        // Growth of 0.01 a second (36 an hour), the last tenth of the points spiking by +100.
        let pts: Vec<(f64, f64)> = (0..200)
            .map(|i| {
                let spike = if i >= 180 { 100.0 } else { 0.0 };
                (i as f64, 50.0 + 0.01 * i as f64 + 0.1 * wobble(i) + spike)
            })
            .collect();
        let t = trend(&pts, 3).unwrap();
        assert!((t.slope_per_h - 36.0).abs() < 36.0 * 0.15, "{t:?}");
        let n = pts.len() as f64;
        let (mx, my) = (
            pts.iter().map(|p| p.0).sum::<f64>() / n,
            pts.iter().map(|p| p.1).sum::<f64>() / n,
        );
        let ols = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum::<f64>()
            / pts.iter().map(|p| (p.0 - mx).powi(2)).sum::<f64>()
            * 3600.0;
        assert!(
            ols > 10.0 * t.slope_per_h,
            "least squares {ols}, Theil–Sen {}",
            t.slope_per_h
        );
        assert!(t.rises() && t.slope_per_h > 10.0, "{t:?}");
    }

    #[test]
    fn slow_growth_under_noise_is_found_and_its_interval_excludes_zero() {
        // +1 per 100 s under noise of ±1: 36 an hour.
        let pts: Vec<(f64, f64)> = (0..600)
            .map(|i| (i as f64, 100.0 + 0.01 * i as f64 + wobble(i)))
            .collect();
        let t = trend(&pts, 11).unwrap();
        assert!(
            t.low_per_h > 0.0 && t.low_per_h < 36.0 && t.high_per_h > 36.0,
            "{t:?}"
        );
        assert_eq!(t.points, MAX_POINTS);
        // Block medians: the first and the last block's middle, within a block (5 s) of the ends.
        assert!((t.span_s - 599.0).abs() <= 5.0, "{t:?}");
        // The same samples, the same interval.
        assert_eq!(trend(&pts, 11), Some(t));
    }

    #[test]
    fn too_few_points_or_one_instant_fit_nothing() {
        assert_eq!(trend(&[(0.0, 1.0), (1.0, 2.0)], 1), None);
        assert_eq!(trend(&[(5.0, 1.0), (5.0, 2.0), (5.0, 3.0)], 1), None);
        assert_eq!(median_in_place(&mut [3.0, 1.0, 2.0, 10.0]), Some(2.5));
        assert_eq!(median_in_place(&mut []), None);
    }
}
