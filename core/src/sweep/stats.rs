//! Repeats: the median and range of one figure over a point's K runs, and whether two values differ.
//! Two values whose ranges overlap are not ranked: with K runs each, the difference is not measurable.

use serde::{Deserialize, Serialize};

/// One figure over the runs of a point.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub runs: usize,
}

impl Spread {
    /// None when no run measured it.
    pub fn of(values: &[f64]) -> Option<Spread> {
        let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            return None;
        }
        let median = crate::median::median(&v)?;
        v.sort_by(f64::total_cmp);
        let n = v.len();
        Some(Spread {
            median,
            min: v[0],
            max: v[n - 1],
            runs: n,
        })
    }

    pub fn overlaps(&self, other: &Spread) -> bool {
        self.min <= other.max && other.min <= self.max
    }

    /// Apart by more than the noise: the higher range starts at least `NOISE` of the lower one's top
    /// above it, and the gap is at least as wide as either range, since a gap smaller than what the
    /// runs of one value differ by is not a measured difference. With the share alone, two equal
    /// values over 3 runs each were ranked on a noisy figure (a login p95 of 20 logins) now and then:
    /// in 5-7 % of comparisons of simulated lognormal runs (sigma 0.3-0.6), under 1 % with both.
    pub fn apart(&self, other: &Spread) -> bool {
        let (lo, hi) = if self.max < other.min {
            (self, other)
        } else {
            (other, self)
        };
        let gap = hi.min - lo.max;
        !self.overlaps(other) && gap >= NOISE * lo.max.abs() && gap >= lo.width().max(hi.width())
    }

    fn width(&self) -> f64 {
        self.max - self.min
    }

    /// `1,200` for one run; `1,200 (1,100–1,300)` for several.
    pub fn text(&self, show: impl Fn(f64) -> String) -> String {
        if self.runs <= 1 || self.min == self.max {
            show(self.median)
        } else {
            format!(
                "{} ({}–{})",
                show(self.median),
                show(self.min),
                show(self.max)
            )
        }
    }
}

/// The smallest gap called a difference, as a share of the lower figure: ranges apart by less (a login
/// p95 of 8.4 against 7.9 ms over 3 runs) are within what runs of one configuration differ by, and
/// capacities closer than a search's default precision are not told apart by it either.
pub const NOISE: f64 = 0.10;

/// How two values of the variable compare on one figure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Difference {
    pub figure: String,
    pub a: String,
    pub b: String,
    /// Their ranges are apart by more than `NOISE`; otherwise no difference is claimed.
    pub measurable: bool,
    pub sentence: String,
}

/// `figure` of values `a` and `b`: which is higher, or plainly that no difference is measurable with
/// this many runs.
pub fn compare(figure: &str, a: (&str, &Spread), b: (&str, &Spread)) -> Difference {
    let runs = a.1.runs.min(b.1.runs);
    let measurable = a.1.apart(b.1);
    let sentence = if measurable && runs == 1 {
        let (hi, lo) = if a.1.median > b.1.median {
            (a, b)
        } else {
            (b, a)
        };
        format!(
            "{figure}: {} is higher than {} in one run each (--repeat 3 tells whether it holds)",
            hi.0, lo.0
        )
    } else if measurable {
        let (hi, lo) = if a.1.median > b.1.median {
            (a, b)
        } else {
            (b, a)
        };
        format!(
            "{figure}: {} is higher than {} (ranges apart over {runs} runs)",
            hi.0, lo.0
        )
    } else {
        format!(
            "{figure}: no difference measurable between {} and {} at K = {runs}",
            a.0, b.0
        )
    };
    Difference {
        figure: figure.into(),
        a: a.0.into(),
        b: b.0.into(),
        measurable,
        sentence,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_and_range() {
        let s = Spread::of(&[3.0, 1.0, 2.0]).unwrap();
        assert_eq!((s.median, s.min, s.max, s.runs), (2.0, 1.0, 3.0, 3));
        assert_eq!(Spread::of(&[1.0, 4.0]).unwrap().median, 2.5);
        assert_eq!(Spread::of(&[]), None);
        assert_eq!(s.text(|x| format!("{x}")), "2 (1–3)");
    }

    #[test]
    fn overlapping_ranges_are_not_ranked() {
        let a = Spread::of(&[100.0, 120.0, 110.0]).unwrap();
        let b = Spread::of(&[115.0, 130.0, 125.0]).unwrap();
        let d = compare("login p95", ("A", &a), ("B", &b));
        assert!(!d.measurable);
        assert!(
            d.sentence.contains("no difference measurable") && d.sentence.contains("K = 3"),
            "{}",
            d.sentence
        );
        let c = Spread::of(&[200.0, 210.0, 205.0]).unwrap();
        let d = compare("login p95", ("A", &a), ("C", &c));
        assert!(d.measurable);
        assert!(
            d.sentence.starts_with("login p95: C is higher than A"),
            "{}",
            d.sentence
        );
        // Equal single runs: the same figure, nothing to rank.
        let one = Spread::of(&[400.0]).unwrap();
        assert!(!compare("capacity", ("A", &one), ("B", &one)).measurable);
        // Apart, but by less than the noise: 8.5 ms against 8.0 ms is no difference.
        let near = Spread::of(&[8.5, 8.6, 8.7]).unwrap();
        let base = Spread::of(&[7.9, 8.0, 8.1]).unwrap();
        assert!(!near.overlaps(&base));
        assert!(!compare("login p95", ("A", &near), ("B", &base)).measurable);
        // Apart by more than the share, but by less than the runs of each differ: no difference.
        let wide = Spread::of(&[40.0, 50.0, 60.0]).unwrap();
        let above = Spread::of(&[68.0, 80.0, 95.0]).unwrap();
        assert!(!above.overlaps(&wide) && 68.0 - 60.0 >= NOISE * 60.0);
        assert!(!compare("login p95", ("A", &wide), ("B", &above)).measurable);
        let far = Spread::of(&[90.0, 100.0, 110.0]).unwrap();
        assert!(compare("login p95", ("A", &wide), ("B", &far)).measurable);
        // A capacity of 0 against any other is a difference.
        let zero = Spread::of(&[0.0]).unwrap();
        assert!(compare("capacity", ("A", &zero), ("B", &one)).measurable);
    }
}
