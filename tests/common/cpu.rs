//! The CPU findings' quota, scaled to the machine. Those tests judge logins at bcrypt cost 10 on a small
//! CPU quota, with levels set a margin either side of a knee measured on the development machine; a
//! machine whose cores compute a bcrypt half as fast halves the logins a quota checks per second and moves
//! the knee (CI, 2026-12-02: login p95 5.3 s at 40 users where 0.9-1.3 s was measured). So the quota is
//! scaled by how long a bcrypt takes here against there, and the knee stays where the levels expect it.
//! "How long" is the CPU time of the thread that computes it, not the wall time: on a host kept busy by
//! other tests, a bcrypt waits for a CPU as well as computing, and a wall-time scale doubled the quota
//! (0.8 CPU for 0.4) so that 40 users passed where the test expects the knee (a run of 4 tests at once).

/// One bcrypt of cost 10 (median of 9) on the machine the findings' figures were measured on: AMD EPYC,
/// 2 CPUs, the sandbox of sandbox.md.
const REFERENCE_MS: f64 = 66.6;

/// This thread's CPU time, in ms.
fn thread_cpu_ms() -> f64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec it is given.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    assert_eq!(rc, 0, "clock_gettime: {}", std::io::Error::last_os_error());
    t.tv_sec as f64 * 1000.0 + t.tv_nsec as f64 / 1e6
}

/// A bcrypt of cost 10 here, in ms of CPU: the median of 9, after one to warm up.
pub fn bcrypt_ms() -> f64 {
    let hash = bcrypt::hash("calibration", 10).unwrap();
    let mut ms: Vec<f64> = (0..9)
        .map(|_| {
            let t = thread_cpu_ms();
            assert!(bcrypt::verify("calibration", &hash).unwrap());
            thread_cpu_ms() - t
        })
        .collect();
    ms.sort_by(f64::total_cmp);
    ms[ms.len() / 2]
}

/// The `--cpus` that gives logins here the pace `reference` CPUs gave them on the reference machine.
pub fn quota(reference: f64) -> String {
    let here = bcrypt_ms();
    let scale = (here / REFERENCE_MS).clamp(0.5, 4.0);
    let cpus = format!("{:.2}", reference * scale);
    eprintln!("bcrypt cost 10: {here:.1} ms here, {REFERENCE_MS} ms on the reference machine: --cpus {cpus}");
    cpus
}
