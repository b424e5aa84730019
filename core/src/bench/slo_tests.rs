//! The objectives table's tests: its defaults, `--slo`, the checks, and README's table.

use super::super::figures::Pcts;
use super::*;

fn figures() -> LevelFigures {
    LevelFigures {
        users: 1000,
        held: 1000,
        refused: 0,
        stalled: 0,
        login_ms: Some(Pcts::new(40.0, 120.0, 300.0)),
        connect_ms: Some(Pcts::new(2.0, 8.0, 20.0)),
        delivery_ms: None,
        frame_errors: None,
        ..LevelFigures::default()
    }
}

#[test]
fn defaults_hold_for_a_served_level_and_unmeasured_ones_are_not_called_met() {
    let checks = Slos::default().check(&figures());
    assert!(checks.iter().all(|c| !c.failed()), "{checks:?}");
    let delivery = checks.iter().find(|c| c.key == "delivery_p95").unwrap();
    assert_eq!(delivery.ok, None);
    assert_eq!(delivery.describe(), "delivery_p95 not measured (≤ 1000 ms)");
}

#[test]
fn each_objective_fails_on_its_own_figure() {
    let s = Slos::default();
    type Change = fn(&mut LevelFigures);
    let cases: [(&str, Change); 7] = [
        ("held", |f| f.held = 998),
        ("refused", |f| f.refused = 1),
        ("stalled", |f| f.stalled = 3),
        ("login_p95", |f| {
            f.login_ms = Some(Pcts::new(1.0, 6_120.0, 7_000.0))
        }),
        ("connect_p95", |f| {
            f.connect_ms = Some(Pcts::new(1.0, 2_500.0, 3_000.0))
        }),
        ("frame_errors", |f| f.frame_errors = Some(4)),
        ("health_p95", |f| {
            f.health_ms = Some(Pcts::new(8.0, 2_800.0, 9_000.0))
        }),
    ];
    for (key, change) in cases {
        let mut f = figures();
        change(&mut f);
        let failed: Vec<String> = s
            .check(&f)
            .into_iter()
            .filter(|c| c.failed())
            .map(|c| c.key)
            .collect();
        assert_eq!(failed, vec![key.to_string()], "{key}");
    }
    let mut f = figures();
    f.login_ms = Some(Pcts::new(1.0, 6_120.0, 7_000.0));
    let c = s.check(&f).into_iter().find(|c| c.failed()).unwrap();
    assert_eq!(c.describe(), "login_p95 6120 ms (≤ 5000 ms)");
}

#[test]
fn overrides_are_typed_and_bad_ones_named() {
    let s = Slos::with_overrides(&[
        "held=99.5%".into(),
        "login_p95=2s".into(),
        "refused=3".into(),
    ])
    .unwrap();
    assert_eq!((s.held_pct, s.login_p95_ms, s.refused), (99.5, 2000.0, 3));
    for (bad, says) in [
        ("held", "not KEY=VALUE"),
        ("speed=1", "unknown objective \"speed\""),
        ("held=101", "held takes a percentage"),
        ("login_p95=2", "login_p95 takes a duration"),
        ("refused=-1", "refused takes a count"),
        ("connect_p95=2h", "connect_p95 takes a duration"),
    ] {
        let e = Slos::with_overrides(&[bad.into()]).unwrap_err();
        assert_eq!(e.field, "--slo");
        assert!(
            format!("{} {}", e.problem, e.fix).contains(says),
            "{bad}: {e}"
        );
    }
}

#[test]
fn the_table_gives_the_defaults_keys_and_bounds_of_before() {
    assert_eq!(
        Slos::default(),
        Slos {
            held_pct: 99.9,
            refused: 0,
            stalled: 0,
            login_p95_ms: 5_000.0,
            connect_p95_ms: 2_000.0,
            delivery_p95_ms: 1_000.0,
            frame_errors: 0,
            health_p95_ms: 1_000.0,
            browser_ms: 10_000.0,
            back_ms: 30_000.0,
            growth_pct: 10.0,
        }
    );
    let keys: Vec<&str> = settable().map(|(o, _)| o.key).collect();
    assert_eq!(
        keys,
        [
            "held",
            "refused",
            "stalled",
            "login_p95",
            "connect_p95",
            "delivery_p95",
            "frame_errors",
            "health_p95",
            "browser",
            "back",
            "growth"
        ]
    );
    let bounds: Vec<String> = Slos::default()
        .check(&figures())
        .into_iter()
        .map(|c| format!("{} {}", c.key, c.bound))
        .collect();
    assert_eq!(
        bounds,
        [
            "held ≥ 99.9%",
            "refused ≤ 0",
            "stalled ≤ 0",
            "login_p95 ≤ 5000 ms",
            "connect_p95 ≤ 2000 ms",
            "delivery_p95 ≤ 1000 ms",
            "frame_errors ≤ 0",
            "health_p95 ≤ 1000 ms"
        ],
        "no plateau check without a plateau, no back check without a fault"
    );
    // Each row's setter writes the field its getter reads, and no other.
    for (o, s) in settable() {
        let mut slos = Slos::default();
        (s.set)(&mut slos, 7.0);
        assert_eq!((s.get)(&slos), 7.0, "{}", o.key);
        for (other, t) in settable().filter(|(x, _)| x.key != o.key) {
            assert_eq!((t.get)(&slos), t.default, "{} wrote {}", o.key, other.key);
        }
    }
    // results.json written before health_p95 read with its default.
    let old = r#"{"held_pct":99.0,"refused":1,"stalled":0,"login_p95_ms":2000.0,"connect_p95_ms":2000.0,"delivery_p95_ms":1000.0,"frame_errors":0}"#;
    let s: Slos = serde_json::from_str(old).unwrap();
    assert_eq!((s.held_pct, s.health_p95_ms), (99.0, 1_000.0));
}

#[test]
fn the_plateau_is_checked_against_the_hold_and_set_by_no_slo() {
    let mut f = figures();
    f.plateau = Some(crate::plateau::PlateauFigures {
        hold_s: 8.0,
        ..Default::default()
    });
    let checks = Slos::default().check(&f);
    let p = checks.last().unwrap();
    assert_eq!((p.key.as_str(), p.bound.as_str()), ("plateau", "≥ 8 s"));
    let e = Slos::with_overrides(&["plateau=8s".into()]).unwrap_err();
    assert!(e.problem.contains("unknown objective"), "{e}");
    assert!(!e.fix.contains("plateau"), "{e}");
}

/// Every dial failed (`--source-addrs` of the wrong family, a door that refused): the hold began with
/// nobody open and ran its length. A hold of nobody is no plateau: never met.
#[test]
fn a_plateau_with_nobody_open_is_not_met() {
    let mut f = figures();
    let hold = crate::plateau::PlateauFigures {
        target: 20,
        hold_s: 8.0,
        start_s: Some(1.0),
        end_s: Some(9.0),
        ..Default::default()
    };
    f.plateau = Some(crate::plateau::PlateauFigures {
        open_at_start: 0,
        min_open: 0,
        ..hold.clone()
    });
    let p = Slos::default().check(&f).pop().unwrap();
    assert_eq!(
        (p.key.as_str(), p.measured, p.ok),
        ("plateau", Some(0.0), Some(false))
    );
    // With sockets open through it, its length.
    f.plateau = Some(crate::plateau::PlateauFigures {
        open_at_start: 20,
        min_open: 19,
        ..hold
    });
    let p = Slos::default().check(&f).pop().unwrap();
    assert_eq!((p.measured, p.ok), (Some(8.0), Some(true)));
}

/// README's objectives table is the table's own rendering (`markdown_table`): a row changed here (a
/// default, a sentence, a scenario) fails this test until README says the same.
#[test]
fn readme_shows_the_objectives_table() {
    let readme = include_str!("../../../README.md");
    let table = markdown_table();
    assert!(
        readme.contains(&table),
        "README.md's objectives table differs from OBJECTIVES; it should read:\n\n{table}"
    );
}

/// `--fault`: the sockets drop by design, so the plateau (everyone open all along) is not measured;
/// `back` judges their return: met within its bound, failed past it or when one never came back.
#[test]
fn a_fault_is_judged_on_the_users_return_not_on_the_plateau() {
    use crate::bench::fault::FaultFigures;
    use crate::load::recovery::Recovery;
    let mut f = figures();
    f.plateau = Some(crate::plateau::PlateauFigures {
        target: 1000,
        hold_s: 20.0,
        start_s: Some(1.0),
        end_s: Some(21.0),
        open_at_start: 1000,
        min_open: 480,
        ..Default::default()
    });
    let back = |f: &LevelFigures, slos: &Slos| {
        let checks = slos.check(f);
        let plateau = checks.iter().find(|c| c.key == "plateau").map(|c| c.ok);
        let back = checks
            .iter()
            .find(|c| c.key == "back")
            .map(|c| (c.measured, c.ok));
        (plateau, back)
    };
    // Without a fault the plateau is measured, and there is no back check.
    assert_eq!(back(&f, &Slos::default()), (Some(Some(true)), None));
    let recovery = Recovery {
        drops: 520,
        users_dropped: 520,
        users_back: 520,
        back_max_ms: Some(3_100.0),
        ..Recovery::default()
    };
    f.fault = Some(FaultFigures {
        planned: "restart:app-1@5s".into(),
        services: vec!["app-1".into()],
        at_s: Some(5.0),
        recovery: recovery.clone(),
        ..FaultFigures::default()
    });
    assert_eq!(
        back(&f, &Slos::default()),
        (Some(None), Some((Some(3_100.0), Some(true))))
    );
    let strict = Slos::with_overrides(&["back=2s".into()]).unwrap();
    assert_eq!(back(&f, &strict).1, Some((Some(3_100.0), Some(false))));
    // One never back: failed whatever the bound, and said so.
    f.fault.as_mut().unwrap().recovery.not_back = 1;
    let checks = Slos::default().check(&f);
    let c = checks.iter().find(|c| c.key == "back").unwrap();
    assert_eq!(c.ok, Some(false));
    assert!(c.describe().contains("did not finish"), "{}", c.describe());
    // Nothing dropped: back in 0.
    f.fault.as_mut().unwrap().recovery = Recovery::default();
    assert_eq!(back(&f, &Slos::default()).1, Some((Some(0.0), Some(true))));
}
