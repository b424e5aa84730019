//! Where adding instances stops paying: a sweep over `instances` alone, each value's median capacity
//! fitted to the Universal Scalability Law (`usl`), said as one sentence, with N* and the next instance
//! count's predicted capacity. A value whose capacity is not one (held every level it tried, failed its
//! first, unknown) is left out, and said.

use serde::Serialize;

use super::summary::{show_users, ValueSummary};
use super::usl::{self, Fit};

/// The variable whose values are instance counts.
pub const INSTANCES: &str = "instances";

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Scaling {
    /// The fit (None: not fitted, `sentence` says why).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fit: Option<Fit>,
    /// N*, where capacity peaks (None: no coherency cost measured).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peak_instances: Option<f64>,
    /// The next instance count (the last one plus the last step) and the capacity the fit gives it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next: Option<Predicted>,
    /// Values left out of the fit, each with why: `4: at least 400 (held every level it tried)`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<String>,
    pub sentence: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Predicted {
    pub instances: u32,
    pub capacity: f64,
}

/// Three significant digits: 0.0523, 0.00198, 1.25.
pub fn sig3(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return "0".into();
    }
    let decimals = (2 - x.abs().log10().floor() as i32).clamp(0, 12) as usize;
    format!("{x:.decimals$}")
}

/// The scaling law of a sweep over `instances` alone (None for any other sweep).
pub fn scaling(variables: &[String], values: &[ValueSummary]) -> Option<Scaling> {
    if variables != [INSTANCES] {
        return None;
    }
    let mut points = Vec::new();
    let mut left_out = Vec::new();
    for v in values {
        let n: u32 = v.values.first()?.parse().ok()?;
        match (&v.capacity, v.at_least) {
            (None, _) => left_out.push(format!("{n}: no capacity known")),
            (Some(_), true) => left_out.push(format!(
                "{n}: {} (held every level it tried: not a capacity)",
                v.capacity_text()
            )),
            (Some(c), false) if c.median <= 0.0 => {
                left_out.push(format!("{n}: {}", v.capacity_text()))
            }
            (Some(c), false) => points.push((n as f64, c.median)),
        }
    }
    let out = |fit, left_out: Vec<String>, sentence| Scaling {
        fit,
        peak_instances: None,
        next: None,
        left_out,
        sentence,
    };
    let also = if left_out.is_empty() {
        String::new()
    } else {
        format!(" (left out: {})", left_out.join("; "))
    };
    let fit = match usl::fit(&points) {
        Ok(f) => f,
        Err(e) => {
            return Some(out(
                None,
                left_out.clone(),
                format!("scaling by instances: not fitted: {e}{also}"),
            ))
        }
    };
    let mut ns: Vec<u32> = points.iter().map(|p| p.0 as u32).collect();
    ns.sort_unstable();
    ns.dedup();
    let last = *ns.last().expect("three counts at least");
    let step = last - ns[ns.len() - 2];
    let next = Predicted {
        instances: last + step,
        capacity: fit.usl.capacity((last + step) as f64),
    };
    let u = fit.usl;
    let shape = match (u.peak(), u.sigma > 0.0) {
        (Some(p), _) => format!(
            "adding instances stops paying at N* ≈ {} (about {} users there)",
            sig3(p),
            show_users(u.capacity(p))
        ),
        (None, true) => format!(
            "no coherency cost measured (κ = 0): capacity flattens towards λ/σ ≈ {} users",
            show_users(u.lambda / u.sigma)
        ),
        (None, false) => "linear so far (σ = κ = 0)".into(),
    };
    let counts: Vec<String> = ns.iter().map(u32::to_string).collect();
    let sentence = format!(
        "scaling by instances (Universal Scalability Law over {}): one instance λ ≈ {} users, contention σ = {}, coherency κ = {} (fit residual {} %); {shape}; {} instances: about {} users predicted{also}",
        counts.join(", "),
        show_users(u.lambda),
        sig3(u.sigma),
        sig3(u.kappa),
        sig3(fit.residual * 100.0),
        next.instances,
        show_users(next.capacity),
    );
    Some(Scaling {
        peak_instances: u.peak(),
        next: Some(next),
        ..out(Some(fit), left_out, sentence)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::stats::Spread;
    use crate::sweep::usl::Usl;

    fn value(n: u32, capacity: Option<f64>, at_least: bool) -> ValueSummary {
        ValueSummary {
            values: vec![n.to_string()],
            label: n.to_string(),
            runs: 1,
            capacity: capacity.and_then(|c| Spread::of(&[c])),
            at_least,
            unknown: vec![],
            leaked: None,
            limiting: vec![],
            images: Default::default(),
            levels: vec![],
            points: vec![],
        }
    }

    #[test]
    fn a_sweep_over_instances_is_fitted_and_said() {
        let law = Usl {
            lambda: 1000.0,
            sigma: 0.05,
            kappa: 0.02,
        };
        let values: Vec<ValueSummary> = (1..=4)
            .map(|n| value(n, Some(law.capacity(n as f64).round()), false))
            .collect();
        let s = scaling(&["instances".into()], &values).unwrap();
        let f = s.fit.as_ref().unwrap();
        assert!((f.usl.sigma - 0.05).abs() < 0.0025, "{f:?}");
        assert!((f.usl.kappa - 0.02).abs() < 0.001, "{f:?}");
        assert_eq!(s.next.unwrap().instances, 5);
        let want = law.capacity(5.0);
        assert!((s.next.unwrap().capacity - want).abs() < want * 0.01);
        assert!(s.sentence.contains("σ = 0.05"), "{}", s.sentence);
        assert!(s.sentence.contains("N* ≈ 6.89"), "{}", s.sentence);
        assert!(s.sentence.contains("5 instances: about"), "{}", s.sentence);
    }

    #[test]
    fn other_sweeps_have_none_and_a_bound_is_left_out_and_said() {
        assert_eq!(
            scaling(&["nginx".into()], &[value(1, Some(5.0), false)]),
            None
        );
        let values = vec![
            value(1, Some(15.0), false),
            value(2, Some(30.0), false),
            value(3, Some(400.0), true),
        ];
        let s = scaling(&["instances".into()], &values).unwrap();
        assert!(s.fit.is_none());
        assert!(
            s.sentence.contains("not fitted: 2 instance count(s)")
                && s.sentence.contains("3: at least 400"),
            "{}",
            s.sentence
        );
    }

    #[test]
    fn three_significant_digits() {
        assert_eq!(sig3(0.052345), "0.0523");
        assert_eq!(sig3(0.00198), "0.00198");
        assert_eq!(sig3(6.8920), "6.89");
        assert_eq!(sig3(1234.0), "1234");
        assert_eq!(sig3(0.0), "0");
    }
}
