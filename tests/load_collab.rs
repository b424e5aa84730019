//! `exectl load collab` against the real stand-in: five collaborators in one project; every frame one
//! sends reaches the four others, with its delivery latency measured from the timestamp it carries.

mod load_support;

use std::time::Duration;

use load_support::{exectl_load, Standin};

#[test]
fn collab_fans_every_frame_out_to_the_others() {
    let s = Standin::start(&[]);
    // User 0 owns the project; users 1..4 are collaborators (project_collaborators rows).
    let seeded = load_support::seed(&s, 5, vec![(0, vec![1, 2, 3, 4])], 4);
    let dir = tempfile::tempdir().unwrap();
    seeded.write_manifest(dir.path(), None, 0);
    let m = dir.path().to_str().unwrap();
    let url = s.url();
    let (code, json, stderr) = exectl_load(
        &[
            "collab",
            "--url",
            &url,
            "--manifest",
            m,
            "--ramp",
            "500ms",
            "--hold",
            "4s",
            "--interval",
            "200ms",
            "--json",
        ],
        Duration::from_secs(60),
    );
    eprintln!("{stderr}");
    let j = json.unwrap_or_else(|| panic!("no summary; stderr:\n{stderr}"));
    assert_eq!(code, 0, "{j:#}");
    assert_eq!(j["held_full_duration"], 5);
    let f = &j["fanout"];
    let sent = f["frames_sent"].as_u64().unwrap();
    assert!(sent >= 5, "every user sends several frames: {f:#}");
    assert_eq!(f["fanout_expected"].as_u64().unwrap(), 4 * sent, "{f:#}");
    assert_eq!(f["fanout_messages"].as_u64().unwrap(), 4 * sent, "{f:#}");
    assert_eq!(
        f["fanout_bytes"].as_u64().unwrap(),
        4 * f["bytes_sent"].as_u64().unwrap()
    );
    assert_eq!(f["users_missing_frames"], 0);
    // Frames are 50..=450 bytes.
    assert!(f["bytes_sent"].as_u64().unwrap() >= 50 * sent);
    assert!(f["bytes_sent"].as_u64().unwrap() <= 450 * sent);
    assert_eq!(f["delivery_ms"]["count"].as_u64().unwrap(), 4 * sent);
    assert!(f["delivery_ms"]["max"].as_f64().unwrap() > 0.0);
}

#[test]
fn editing_mix_runs_its_actions() {
    let s = Standin::start(&[]);
    let seeded = load_support::seed(&s, 4, vec![(0, vec![1]), (2, vec![3])], 4);
    let dir = tempfile::tempdir().unwrap();
    seeded.write_manifest(dir.path(), None, 0);
    let m = dir.path().to_str().unwrap();
    let url = s.url();
    // Waits uniform in [25 ms, 100 ms] over 3 s: dozens of actions per user, every kind drawn.
    let (code, json, stderr) = exectl_load(
        &[
            "editing",
            "--url",
            &url,
            "--manifest",
            m,
            "--ramp",
            "0",
            "--hold",
            "3s",
            "--interval",
            "50ms",
            "--json",
        ],
        Duration::from_secs(60),
    );
    eprintln!("{stderr}");
    let j = json.unwrap_or_else(|| panic!("no summary; stderr:\n{stderr}"));
    assert_eq!(code, 0, "{j:#}");
    assert_eq!(j["held_full_duration"], 4);
    let actions = j["editing"]["actions"].as_object().unwrap();
    assert!(actions["autosave 200"].as_u64().unwrap() > 0, "{actions:?}");
    assert!(actions["metadata 200"].as_u64().unwrap() > 0, "{actions:?}");
    // Collaborators get 403 on /api/v1/projects/:uuid (owner only): expected, not a failure.
    assert!(actions["metadata 403"].as_u64().unwrap() > 0, "{actions:?}");
    assert!(j["fanout"]["frames_sent"].as_u64().unwrap() > 0);
    assert!(j["fanout"]["fanout_messages"].as_u64().unwrap() > 0);
}
