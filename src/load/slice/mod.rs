//! A run split over generator processes (`--processes`): the parent (`fan`) deals the users out by room
//! (`exectl_core::load::slices`), starts one child of the same binary per slice (`exectl load-slice`,
//! `child`), and speaks one JSON object per line with each: the slice's spec first, then "hold" when
//! every slice's dials are over (one common hold for the whole run) or "stop"; the child answers with
//! its counters four times a second and, at its end, its summary and the histograms behind it. The
//! parent merges those (`merge`) into the summary a single process would have written.
//!
//! Each child has its own socket table and open-file limit; ports are the host's, so preflight counts
//! them for the whole run before any child starts.

pub mod child;
pub mod fan;
pub mod merge;
pub mod remote;

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::manifest::{Account, Manifest};
use super::metrics::Live;
use super::settings::Flow;
use super::summary::{Parts, Summary};
use super::{Endpoint, LoadOptions, Scenario};

/// The parent's words to a slice, one per line on its stdin.
pub const HOLD: &str = "hold";
pub const STOP: &str = "stop";

/// How often a slice reports its counters.
pub const TICK: Duration = Duration::from_millis(250);

/// What a slice runs: its users (rooms whole) and the run's settings, and when to start. `U` is how its
/// users travel: `Users` (owned, as the slice reads them) or `Picked` (the parent's view of its manifest:
/// written straight into the slice's pipe, never copied).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SliceSpec<U = Users> {
    pub slice: usize,
    pub of: usize,
    pub scenario: String,
    pub url: String,
    /// The front door's address, resolved and allowed by the parent.
    pub addr: SocketAddr,
    pub host_header: Option<String>,
    pub users: U,
    pub ramp_ms: u64,
    /// The whole run's users: a slice's user starts at its place among them (`Users::slots`).
    #[serde(default)]
    pub ramp_of: usize,
    pub hold_ms: u64,
    pub dial_concurrency: usize,
    pub interval_ms: u64,
    pub ping_after_ms: u32,
    pub answer_within_ms: u32,
    /// Ping only past a pinging server's own cadence (`Bounds::follow_server`).
    #[serde(default = "super::summary::yes")]
    pub follow_server_pings: bool,
    pub sources: Vec<IpAddr>,
    /// The wall-clock instant (unix ms) every slice starts its ramp at.
    pub start_at_unix_ms: u64,
    pub run_id: String,
    /// login-burst's probe runs in one slice only.
    pub probe: bool,
    /// The open model's rate (for the whole run), and what dropped users do.
    #[serde(flatten)]
    pub flow: Flow,
    /// Users leave and come back (`LoadOptions::churn`), ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub churn_ms: Option<u64>,
}

/// A slice's users as it reads them: their accounts, and their tokens with `--tokens`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Users {
    pub accounts: Vec<Account>,
    pub tokens: Option<Vec<String>>,
    /// Each user's place in the whole run (its index among `SliceSpec::ramp_of` users).
    #[serde(default)]
    pub slots: Vec<u32>,
}

/// The users `picked` (indices into `manifest`), serialised as `Users` is.
#[derive(Debug, Clone, Copy)]
pub struct Picked<'a> {
    pub manifest: &'a Manifest,
    pub picked: &'a [usize],
}

impl Picked<'_> {
    pub fn len(&self) -> usize {
        self.picked.len()
    }

    pub fn is_empty(&self) -> bool {
        self.picked.is_empty()
    }
}

impl Serialize for Picked<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        struct Each<'a, T>(&'a [T], &'a [usize]);
        impl<T: Serialize> Serialize for Each<'_, T> {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_seq(self.1.iter().map(|&i| &self.0[i]))
            }
        }
        let m = self.manifest;
        let mut st = s.serialize_struct("Users", 3)?;
        st.serialize_field("accounts", &Each(&m.accounts, self.picked))?;
        st.serialize_field("tokens", &m.tokens.as_deref().map(|t| Each(t, self.picked)))?;
        st.serialize_field("slots", self.picked)?;
        st.end()
    }
}

impl<'a> SliceSpec<Picked<'a>> {
    /// Slice `slice` of `of` of `opts`: the users `users` (indices into the manifest).
    pub fn of(
        opts: &'a LoadOptions,
        slice: usize,
        of: usize,
        users: &'a [usize],
        start_at_unix_ms: u64,
    ) -> SliceSpec<Picked<'a>> {
        SliceSpec {
            slice,
            of,
            scenario: opts.scenario.name().into(),
            url: opts.endpoint.base.to_string(),
            addr: opts.endpoint.addr,
            host_header: opts.endpoint.host_header.clone(),
            users: Picked {
                manifest: &opts.manifest,
                picked: users,
            },
            ramp_ms: opts.ramp.as_millis() as u64,
            ramp_of: opts.users,
            hold_ms: opts.hold.as_millis() as u64,
            dial_concurrency: opts.dial_concurrency.div_ceil(of).max(1),
            interval_ms: opts.interval.as_millis() as u64,
            ping_after_ms: opts.liveness.ping_after_ms,
            answer_within_ms: opts.liveness.answer_within_ms,
            follow_server_pings: opts.liveness.follow_server,
            sources: opts.sources.clone(),
            start_at_unix_ms,
            run_id: format!("{}-s{slice}", opts.run_id),
            probe: opts.probe && slice == 0,
            flow: Flow {
                arrival_rate: opts.arrival_rate,
                reconnect: opts.reconnect,
                relogin: opts.relogin,
            },
            churn_ms: opts.churn.map(|d| d.as_millis() as u64),
        }
    }
}

impl<U> SliceSpec<U> {
    /// Dial the front door at `ip` instead (a slice on a generator host, for a door on loopback here):
    /// its sockets and its HTTP calls alike, the name it had sent as the Host header.
    pub fn dial_at(&mut self, ip: IpAddr) {
        self.addr = SocketAddr::new(ip, self.addr.port());
        if let Ok(mut url) = reqwest::Url::parse(&self.url) {
            if let Some(url::Host::Domain(name)) = url.host() {
                self.host_header.get_or_insert_with(|| name.to_string());
            }
            if url.set_ip_host(ip).is_ok() {
                self.url = url.to_string();
            }
        }
    }
}

impl SliceSpec {
    /// The slice's own run: its users only (moved, not copied), one process, its hold gated on the
    /// parent's word.
    pub fn into_options(self) -> Result<LoadOptions, String> {
        let scenario = Scenario::parse(&self.scenario)
            .ok_or_else(|| format!("unknown scenario {:?}", self.scenario))?;
        let base = reqwest::Url::parse(&self.url).map_err(|e| format!("url {}: {e}", self.url))?;
        let users = self.users.accounts.len();
        let ramp_slots = (self.ramp_of > 0 && self.users.slots.len() == users).then_some(
            crate::load::RampSlots {
                slot: self.users.slots,
                of: self.ramp_of,
            },
        );
        let manifest = Manifest {
            dir: std::path::PathBuf::from(format!("(slice {} of {})", self.slice, self.of)),
            accounts: self.users.accounts,
            projects: Vec::new(),
            tokens: self.users.tokens,
            tokens_expire: None,
        };
        let endpoint = Endpoint {
            base,
            addr: self.addr,
            host_header: self.host_header,
        };
        let mut o = LoadOptions::new(scenario, endpoint, manifest, users);
        o.ramp = Duration::from_millis(self.ramp_ms);
        o.hold = Duration::from_millis(self.hold_ms);
        o.dial_concurrency = self.dial_concurrency.min(users.max(1));
        o.interval = Duration::from_millis(self.interval_ms);
        o.tokens = o.manifest.tokens.is_some();
        o.liveness = exectl_core::load::liveness::Bounds {
            ping_after_ms: self.ping_after_ms,
            answer_within_ms: self.answer_within_ms,
            follow_server: self.follow_server_pings,
        };
        o.run_id = self.run_id;
        o.sources = self.sources;
        o.processes = Some(1);
        o.probe = self.probe;
        o.ramp_slots = ramp_slots;
        o.arrival_rate = self.flow.arrival_rate;
        o.reconnect = self.flow.reconnect;
        o.relogin = self.flow.relogin;
        o.churn = self.churn_ms.map(Duration::from_millis);
        Ok(o)
    }
}

/// A slice's live counters (what the parent sums into its own `Live` for progress and bench's sampler).
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
pub struct Counters {
    pub started: u64,
    pub dialing: u64,
    pub connected: u64,
    pub open: u64,
    pub held: u64,
    pub stalled: u64,
    pub failed: u64,
    pub done: u64,
    pub logins_ok: u64,
    pub frames_sent: u64,
    pub frames_received: u64,
    pub http_requests: u64,
    pub dials_over: u64,
    #[serde(default)]
    pub pings_sent: u64,
}

impl Counters {
    /// The counters as (field of `Counters`, counter of `Live`) pairs: one list for reading, adding
    /// and storing.
    fn pairs<'a>(
        &'a mut self,
        live: &'a Live,
    ) -> [(&'a mut u64, &'a std::sync::atomic::AtomicU64); 13] {
        [
            (&mut self.started, &live.started),
            (&mut self.dialing, &live.dialing),
            (&mut self.connected, &live.connected),
            (&mut self.open, &live.open),
            (&mut self.held, &live.held),
            (&mut self.stalled, &live.stalled),
            (&mut self.failed, &live.failed),
            (&mut self.done, &live.done),
            (&mut self.logins_ok, &live.logins_ok),
            (&mut self.frames_sent, &live.frames_sent),
            (&mut self.frames_received, &live.frames_received),
            (&mut self.http_requests, &live.http_requests),
            (&mut self.pings_sent, &live.pings_sent),
        ]
    }

    pub fn of(live: &Live) -> Counters {
        let mut c = Counters {
            dials_over: live.plateau.dials_over(),
            ..Counters::default()
        };
        for (v, a) in c.pairs(live) {
            *v = Live::get(a);
        }
        c
    }

    pub fn add(&mut self, o: &Counters) {
        let Counters {
            started,
            dialing,
            connected,
            open,
            held,
            stalled,
            failed,
            done,
            logins_ok,
            frames_sent,
            frames_received,
            http_requests,
            dials_over,
            pings_sent,
        } = *o;
        self.started += started;
        self.dialing += dialing;
        self.connected += connected;
        self.open += open;
        self.held += held;
        self.stalled += stalled;
        self.failed += failed;
        self.done += done;
        self.logins_ok += logins_ok;
        self.frames_sent += frames_sent;
        self.frames_received += frames_received;
        self.http_requests += http_requests;
        self.dials_over += dials_over;
        self.pings_sent += pings_sent;
    }

    /// Into `live`'s counters (a parent's, from its slices' sums).
    pub fn store(&self, live: &Live) {
        let mut c = *self;
        for (v, a) in c.pairs(live) {
            a.store(*v, std::sync::atomic::Ordering::Relaxed);
        }
    }
}

/// What a slice says, one JSON object per line on its stdout.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FromSlice {
    /// It began its ramp, `skew_ms` after the agreed instant.
    Started {
        skew_ms: f64,
        pid: u32,
        host: String,
    },
    Tick(Counters),
    Report(Box<SliceReport>),
    /// It cannot run (a bad spec, its host's limits): nothing was dialed.
    Refused(String),
}

/// A slice's end: its summary, and what merging needs besides.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SliceReport {
    pub summary: Summary,
    pub parts: Parts,
}

pub use crate::clock::{unix_ms, unix_ms_f64};

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(url: &str, addr: &str, host_header: Option<&str>) -> SliceSpec {
        spec_of(url, addr, host_header, Users::default())
    }

    fn spec_of<U>(url: &str, addr: &str, host_header: Option<&str>, users: U) -> SliceSpec<U> {
        SliceSpec {
            slice: 1,
            of: 3,
            scenario: "idle".into(),
            url: url.into(),
            addr: addr.parse().unwrap(),
            host_header: host_header.map(str::to_string),
            users,
            ramp_ms: 0,
            ramp_of: 0,
            hold_ms: 1000,
            dial_concurrency: 1,
            interval_ms: 1000,
            ping_after_ms: 5000,
            answer_within_ms: 10000,
            follow_server_pings: true,
            sources: Vec::new(),
            start_at_unix_ms: 0,
            run_id: "r".into(),
            probe: false,
            flow: Flow::default(),
            churn_ms: None,
        }
    }

    #[test]
    fn a_slice_elsewhere_dials_the_door_at_this_hosts_address() {
        let here: IpAddr = "10.199.45.1".parse().unwrap();
        let mut s = spec("http://127.0.0.1:8090/", "127.0.0.1:8090", None);
        s.dial_at(here);
        assert_eq!(s.addr, "10.199.45.1:8090".parse().unwrap());
        assert_eq!(s.url, "http://10.199.45.1:8090/");
        assert_eq!(s.host_header, None);
        // A *.localhost door keeps its name as the Host header (a Host-routed Traefik).
        let mut s = spec("http://exe.localhost:8080/base/", "127.0.0.1:8080", None);
        s.dial_at(here);
        assert_eq!(s.url, "http://10.199.45.1:8080/base/");
        assert_eq!(s.host_header.as_deref(), Some("exe.localhost"));
        let mut s = spec(
            "http://127.0.0.1:8080/",
            "127.0.0.1:8080",
            Some("t.localhost"),
        );
        s.dial_at(here);
        assert_eq!(s.host_header.as_deref(), Some("t.localhost"));
    }

    #[test]
    fn a_slice_reads_back_the_users_its_parent_picked() {
        let account = |i: usize| Account {
            email: format!("u{i}@x.org"),
            password: "pw".into(),
            project_uuid: format!("00000000-0000-0000-0000-{i:012}"),
            role: crate::load::manifest::Role::Owner,
        };
        let manifest = Manifest {
            dir: "m".into(),
            accounts: (0..5).map(account).collect(),
            projects: Vec::new(),
            tokens: Some((0..5).map(|i| format!("t{i}")).collect()),
            tokens_expire: None,
        };
        let picked = [3, 0, 4];
        let sent = |manifest| {
            let users = Picked {
                manifest,
                picked: &picked,
            };
            let mut spec = spec_of("http://127.0.0.1:8090/", "127.0.0.1:8090", None, users);
            (spec.ramp_ms, spec.ramp_of) = (10_000, 5);
            serde_json::to_string(&spec).unwrap()
        };
        let line = sent(&manifest);
        let back: SliceSpec = serde_json::from_str(&line).unwrap();
        let emails: Vec<&str> = back
            .users
            .accounts
            .iter()
            .map(|a| a.email.as_str())
            .collect();
        assert_eq!(emails, ["u3@x.org", "u0@x.org", "u4@x.org"]);
        assert_eq!(back.users.tokens.as_deref().unwrap(), ["t3", "t0", "t4"]);
        let o = back.into_options().unwrap();
        assert_eq!((o.users, o.tokens), (3, true));
        assert_eq!(o.manifest.accounts[2], account(4));
        // Each user starts at its place in the whole run's 10 s ramp of 5, not the slice's own 3.
        let starts: Vec<u64> = (0..3)
            .map(|i| o.start_after(i).as_millis() as u64)
            .collect();
        assert_eq!(starts, [6_000, 0, 8_000]);
        // Without tokens, none travel and the slice logs in.
        let no_tokens = Manifest {
            tokens: None,
            ..manifest.clone()
        };
        let back: SliceSpec = serde_json::from_str(&sent(&no_tokens)).unwrap();
        assert!(!back.into_options().unwrap().tokens);
    }

    #[test]
    fn counters_sum_and_store() {
        let live = Live::default();
        Live::inc(&live.open);
        Live::inc(&live.held);
        let mut c = Counters::of(&live);
        c.add(&Counters::of(&live));
        assert_eq!((c.open, c.held, c.failed), (2, 2, 0));
        let parent = Live::default();
        c.store(&parent);
        assert_eq!(Live::get(&parent.open), 2);
        let line = serde_json::to_string(&FromSlice::Tick(c)).unwrap();
        assert!(matches!(
            serde_json::from_str::<FromSlice>(&line).unwrap(),
            FromSlice::Tick(Counters { open: 2, .. })
        ));
    }
}
