//! The Universal Scalability Law (Gunther): the capacity of N instances
//! `X(N) = λN / (1 + σ(N − 1) + κN(N − 1))`, with λ one instance's capacity, σ the contention (the
//! share of the work that queues on something shared) and κ the coherency cost (each instance paying
//! for every other). Fitted to a sweep's capacities by least squares on the relative error: for a given
//! λ the model is linear in σ and κ (`λN/X − 1 = σ(N − 1) + κN(N − 1)`), so λ is searched (a grid, then a
//! golden-section refinement) and σ, κ solved for each, both kept ≥ 0. Where adding instances stops
//! paying: `N* = √((1 − σ)/κ)`. The `usl` crate is archived; this is the few lines the fit needs.

use serde::Serialize;

/// Fewest instance counts a fit is made from: three parameters, three points.
pub const MIN_POINTS: usize = 3;

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Usl {
    /// One instance's capacity (users).
    pub lambda: f64,
    /// Contention.
    pub sigma: f64,
    /// Coherency.
    pub kappa: f64,
}

impl Usl {
    /// The capacity the law gives `n` instances.
    pub fn capacity(&self, n: f64) -> f64 {
        self.lambda * n / (1.0 + self.sigma * (n - 1.0) + self.kappa * n * (n - 1.0))
    }

    /// N*, where the capacity peaks (None without a coherency cost: it then only flattens, towards λ/σ).
    pub fn peak(&self) -> Option<f64> {
        (self.kappa > 0.0 && self.sigma < 1.0).then(|| ((1.0 - self.sigma) / self.kappa).sqrt())
    }
}

/// A fit and how well it follows the points.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Fit {
    pub usl: Usl,
    /// Root mean square of the fit's relative error at the points (0.03 = 3 %).
    pub residual: f64,
    /// The points fitted: (instances, capacity).
    pub points: Vec<(f64, f64)>,
}

/// Why no fit was made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotFitted {
    /// Fewer than `MIN_POINTS` instance counts with a capacity.
    TooFew(usize),
    /// An instance count below 1, or a capacity not above 0.
    Bad(String),
}

impl std::fmt::Display for NotFitted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotFitted::TooFew(n) => write!(
                f,
                "{n} instance count(s) with a capacity; the fit needs at least {MIN_POINTS}"
            ),
            NotFitted::Bad(why) => f.write_str(why),
        }
    }
}

/// σ, κ ≥ 0 minimising Σ (y − σa − κb)² for a given λ (a = N − 1, b = N(N − 1), y = λN/X − 1).
fn contention_coherency(points: &[(f64, f64)], lambda: f64) -> (f64, f64) {
    let rows: Vec<(f64, f64, f64)> = points
        .iter()
        .map(|&(n, x)| (n - 1.0, n * (n - 1.0), lambda * n / x - 1.0))
        .collect();
    let sum = |f: &dyn Fn(&(f64, f64, f64)) -> f64| rows.iter().map(f).sum::<f64>();
    let (aa, ab, bb) = (
        sum(&|r| r.0 * r.0),
        sum(&|r| r.0 * r.1),
        sum(&|r| r.1 * r.1),
    );
    let (ay, by) = (sum(&|r| r.0 * r.2), sum(&|r| r.1 * r.2));
    let one = |num: f64, den: f64| if den > 0.0 { (num / den).max(0.0) } else { 0.0 };
    let det = aa * bb - ab * ab;
    if det.abs() > 1e-12 * (aa * bb).max(1e-300) {
        let (s, k) = ((ay * bb - by * ab) / det, (by * aa - ay * ab) / det);
        if s >= 0.0 && k >= 0.0 {
            return (s, k);
        }
    }
    // The unconstrained optimum is outside σ, κ ≥ 0: the best with one of them 0.
    let only_sigma = (one(ay, aa), 0.0);
    let only_kappa = (0.0, one(by, bb));
    let err = |(s, k): (f64, f64)| sum(&|r| (r.2 - s * r.0 - k * r.1).powi(2));
    if err(only_sigma) <= err(only_kappa) {
        only_sigma
    } else {
        only_kappa
    }
}

fn model(points: &[(f64, f64)], lambda: f64) -> (Usl, f64) {
    let (sigma, kappa) = contention_coherency(points, lambda);
    let usl = Usl {
        lambda,
        sigma,
        kappa,
    };
    let sse = points
        .iter()
        .map(|&(n, x)| ((usl.capacity(n) - x) / x).powi(2))
        .sum::<f64>();
    (usl, sse)
}

/// The law fitted to (instances, capacity) points; refused from fewer than three instance counts.
pub fn fit(points: &[(f64, f64)]) -> Result<Fit, NotFitted> {
    for &(n, x) in points {
        if !(n >= 1.0 && n.is_finite()) {
            return Err(NotFitted::Bad(format!("instance count {n} is below 1")));
        }
        if !(x > 0.0 && x.is_finite()) {
            return Err(NotFitted::Bad(format!(
                "the capacity of {n} instance(s) is {x}: a fit needs capacities above 0"
            )));
        }
    }
    let mut ns: Vec<f64> = points.iter().map(|p| p.0).collect();
    ns.sort_by(f64::total_cmp);
    ns.dedup();
    if ns.len() < MIN_POINTS {
        return Err(NotFitted::TooFew(ns.len()));
    }
    // λ ≥ X/N at every point (the denominator is at least 1); one instance's capacity is rarely more
    // than a few times the best per-instance capacity measured.
    let low = points.iter().map(|&(n, x)| x / n).fold(0.0, f64::max);
    let high = low * 4.0;
    const GRID: usize = 400;
    let step = (high - low) / GRID as f64;
    let best = (0..=GRID)
        .map(|i| low + step * i as f64)
        .min_by(|a, b| model(points, *a).1.total_cmp(&model(points, *b).1))
        .expect("a grid");
    // Golden-section search around the grid's best.
    let (mut a, mut b) = ((best - step).max(low), (best + step).min(high));
    let g = (5f64.sqrt() - 1.0) / 2.0;
    for _ in 0..100 {
        let (c, d) = (b - g * (b - a), a + g * (b - a));
        if model(points, c).1 <= model(points, d).1 {
            b = d;
        } else {
            a = c;
        }
    }
    let (usl, sse) = model(points, (a + b) / 2.0);
    Ok(Fit {
        usl,
        residual: (sse / points.len() as f64).sqrt(),
        points: points.to_vec(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn synthetic(usl: Usl, ns: &[u32]) -> Vec<(f64, f64)> {
        ns.iter()
            .map(|&n| (n as f64, usl.capacity(n as f64)))
            .collect()
    }

    fn within(got: f64, want: f64, pct: f64) -> bool {
        (got - want).abs() <= want.abs() * pct / 100.0
    }

    #[test]
    fn recovers_known_contention_and_coherency_within_5_percent() {
        for (truth, ns) in [
            (
                Usl {
                    lambda: 1000.0,
                    sigma: 0.05,
                    kappa: 0.02,
                },
                vec![1, 2, 3, 4],
            ),
            // No single-instance point: λ is found by the search.
            (
                Usl {
                    lambda: 420.0,
                    sigma: 0.12,
                    kappa: 0.004,
                },
                vec![2, 4, 6, 8, 10],
            ),
            (
                Usl {
                    lambda: 15.0,
                    sigma: 0.3,
                    kappa: 0.05,
                },
                vec![1, 2, 3],
            ),
        ] {
            let f = fit(&synthetic(truth, &ns)).unwrap();
            for (name, got, want) in [
                ("λ", f.usl.lambda, truth.lambda),
                ("σ", f.usl.sigma, truth.sigma),
                ("κ", f.usl.kappa, truth.kappa),
            ] {
                assert!(within(got, want, 5.0), "{name}: {got} vs {want} ({ns:?})");
            }
            assert!(f.residual < 0.001, "{}", f.residual);
            let peak = f.usl.peak().unwrap();
            let want = ((1.0 - truth.sigma) / truth.kappa).sqrt();
            assert!(within(peak, want, 5.0), "N* {peak} vs {want}");
        }
    }

    #[test]
    fn noisy_points_still_land_near_the_truth() {
        let truth = Usl {
            lambda: 800.0,
            sigma: 0.08,
            kappa: 0.01,
        };
        // ±2 % alternating: a fit of the measured points, not of the model.
        let points: Vec<(f64, f64)> = synthetic(truth, &[1, 2, 3, 4, 5, 6])
            .into_iter()
            .enumerate()
            .map(|(i, (n, x))| (n, x * if i % 2 == 0 { 1.02 } else { 0.98 }))
            .collect();
        let f = fit(&points).unwrap();
        assert!(within(f.usl.lambda, truth.lambda, 10.0), "{f:?}");
        assert!(f.residual > 0.005 && f.residual < 0.05, "{}", f.residual);
        // Its prediction of 7 within 10 % of the law's.
        assert!(within(f.usl.capacity(7.0), truth.capacity(7.0), 10.0));
    }

    #[test]
    fn linear_scaling_fits_zero_contention_and_no_peak() {
        let f = fit(&[(1.0, 100.0), (2.0, 200.0), (3.0, 300.0), (4.0, 400.0)]).unwrap();
        assert!(f.usl.sigma < 1e-6 && f.usl.kappa < 1e-6, "{f:?}");
        assert!(within(f.usl.lambda, 100.0, 0.1));
        assert_eq!(f.usl.peak(), None);
    }

    #[test]
    fn amdahl_alone_has_no_peak() {
        let truth = Usl {
            lambda: 50.0,
            sigma: 0.2,
            kappa: 0.0,
        };
        let f = fit(&synthetic(truth, &[1, 2, 4, 8])).unwrap();
        assert!(within(f.usl.sigma, 0.2, 5.0), "{f:?}");
        assert!(f.usl.kappa < 1e-6, "{f:?}");
        assert_eq!(f.usl.peak(), None);
    }

    #[test]
    fn refuses_fewer_than_three_counts_and_bad_points() {
        assert_eq!(fit(&[(1.0, 10.0), (2.0, 19.0)]), Err(NotFitted::TooFew(2)));
        // Repeats of one count are one count.
        assert_eq!(
            fit(&[(1.0, 10.0), (2.0, 19.0), (2.0, 18.0)]),
            Err(NotFitted::TooFew(2))
        );
        let e = fit(&[(1.0, 10.0), (2.0, 0.0), (3.0, 25.0)]).unwrap_err();
        assert!(
            e.to_string().contains("capacity of 2 instance(s) is 0"),
            "{e}"
        );
        assert!(fit(&[(0.0, 10.0), (2.0, 19.0), (3.0, 25.0)]).is_err());
        assert!(NotFitted::TooFew(2).to_string().contains("at least 3"));
    }
}
