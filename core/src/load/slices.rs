//! `--processes`: one run split over several generator processes (slices), each with its own socket
//! table and open-file limit. Which users a slice runs (rooms kept whole, so every frame of a room is
//! sent and received inside one slice and counted there), how many processes a run needs, and when a
//! slice measured itself rather than the server (generator-bound).

/// A slice using more than this share of the CPU it may use during the hold measured itself: its
/// latencies include its own queueing (the seed's k6 and the MQTT seed both ended up there).
pub const BOUND_SHARE: f64 = 0.85;

/// A slice whose cgroup throttled it in at least this share of the hold's CPU periods was held back by
/// its quota, whatever share it used (the kernel's bandwidth control idles a throttled group now and
/// then, so a saturated quota reads 80-90 %, not 100 %).
pub const BOUND_THROTTLED: f64 = 0.5;

/// Most --processes: far past what one host's cores and file limit ask for.
pub const MAX_PROCESSES: usize = 64;

/// The users of each of `p` slices, given each user's room: rooms dealt round-robin in the order they
/// first appear, so slices are balanced in users when rooms are small and no room is split.
pub fn assign(rooms: &[u64], p: usize) -> Vec<Vec<usize>> {
    let p = p.max(1);
    let mut slice_of_room = std::collections::HashMap::new();
    let mut out = vec![Vec::new(); p];
    // The next room goes to the slice with the fewest users so far (ties: the lowest index).
    for (user, room) in rooms.iter().enumerate() {
        let k = *slice_of_room
            .entry(*room)
            .or_insert_with(|| (0..p).min_by_key(|&k| (out[k].len(), k)).expect("p >= 1"));
        out[k].push(user);
    }
    out
}

/// Processes needed so that each holds at most `hard` open files, when `fds` are needed in all and each
/// process needs `slack` of its own besides its sockets.
pub fn processes_needed(fds: u64, hard: u64, slack: u64) -> usize {
    if fds <= hard {
        return 1;
    }
    let per = hard.saturating_sub(slack).max(1);
    (fds.saturating_sub(slack)).div_ceil(per) as usize
}

/// The share of its CPU a slice used: `cpu_s` of CPU time over `wall_s` with `capacity` CPUs.
pub fn cpu_share(cpu_s: f64, wall_s: f64, capacity: f64) -> Option<f64> {
    (wall_s > 0.0 && capacity > 0.0).then(|| cpu_s / (wall_s * capacity))
}

/// Whether a slice that used `share` of its CPU during the hold, and was throttled in `throttled` of
/// its cgroup's periods (None without a quota), was bound by it.
pub fn bound(share: Option<f64>, throttled: Option<f64>) -> bool {
    share.is_some_and(|s| s >= BOUND_SHARE) || throttled.is_some_and(|t| t >= BOUND_THROTTLED)
}

/// The share of `periods` (a count's growth over the hold) in which the group was `throttled`.
pub fn throttled_share(periods: u64, throttled: u64) -> Option<f64> {
    (periods > 0).then(|| throttled as f64 / periods as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rooms_stay_whole_and_slices_balance() {
        // Rooms of two: 0 0 1 1 2 2 3 3 over two slices.
        let rooms = [10, 10, 11, 11, 12, 12, 13, 13];
        let s = assign(&rooms, 2);
        assert_eq!(s, vec![vec![0, 1, 4, 5], vec![2, 3, 6, 7]]);
        // A room's members, wherever they sit in the manifest, are in one slice.
        let mixed = [1, 2, 1, 3, 2, 3];
        let s = assign(&mixed, 3);
        for members in [[0, 2], [1, 4], [3, 5]] {
            let k = s.iter().position(|v| v.contains(&members[0])).unwrap();
            assert!(s[k].contains(&members[1]), "{s:?}");
        }
        // Rooms of one (idle): users dealt evenly; every user once.
        let solo: Vec<u64> = (0..10).collect();
        let s = assign(&solo, 3);
        assert_eq!(s.iter().map(Vec::len).collect::<Vec<_>>(), vec![4, 3, 3]);
        let mut all: Vec<usize> = s.concat();
        all.sort();
        assert_eq!(all, (0..10).collect::<Vec<_>>());
        assert_eq!(assign(&solo, 0).len(), 1);
    }

    #[test]
    fn processes_for_the_file_limit() {
        assert_eq!(processes_needed(10_000, 20_000, 64), 1);
        // 50,000 sockets + slack: three processes of under 20,000 each.
        assert_eq!(processes_needed(50_129, 20_000, 64), 3);
        assert_eq!(processes_needed(40_000, 20_000, 64), 3);
        assert_eq!(processes_needed(39_000, 20_000, 64), 2);
    }

    #[test]
    fn a_busy_slice_is_bound() {
        assert_eq!(cpu_share(1.0, 0.0, 1.0), None);
        let s = cpu_share(9.0, 10.0, 1.0);
        assert!(bound(s, None));
        assert!(!bound(cpu_share(1.0, 10.0, 0.2), None)); // 50 % of a fifth
        assert!(bound(cpu_share(1.8, 10.0, 0.2), None)); // 90 % of a fifth
        assert!(!bound(None, None));
        // 82 % of its quota, throttled in 9 periods of 10: held back.
        assert!(bound(cpu_share(1.64, 10.0, 0.2), throttled_share(100, 90)));
        assert!(!bound(cpu_share(1.0, 10.0, 0.2), throttled_share(100, 3)));
        assert_eq!(throttled_share(0, 0), None);
    }
}
