//! results.json: everything a bench decided and where it came from, enough to rebuild the report and to
//! compare two runs (`runs diff`). The timeline is beside it (timeline.jsonl).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::cpu::CpuScale;
use super::slo::Slos;
use super::verdict::{LevelResult, Verdict};

/// What the sampler itself cost the SUT, measured (None when it could not be).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SamplerCost {
    pub samples: u64,
    /// The mean wall time of one SUT sample (its host command and probes), ms.
    pub mean_sample_ms: f64,
    /// CPU the sampler's host commands used on the SUT, percent of one core over the bench.
    pub sut_cpu_pct: Option<f64>,
    /// Host scripts started for all those samples: 1 when the one kept running never failed.
    #[serde(default)]
    pub host_scripts: u64,
}

/// Where a bench stands: results.json is written before level 1 (`running`), after every level, and at
/// the end (`complete`), or on SIGINT/SIGTERM (`interrupted`). A file still `running` whose `pid` is gone
/// was killed (kill -9, a crash): readers show it as interrupted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RunState {
    Running,
    #[default]
    Complete,
    Interrupted,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Results {
    pub run_id: String,
    /// Older results (before the field) were only ever written complete.
    #[serde(default)]
    pub state: RunState,
    /// The bench's process (on the machine that wrote the file) while it runs, so a reader can tell a
    /// bench still running from one that was killed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    pub exectl_version: String,
    pub stack: String,
    /// `local` or `ssh://user@host`.
    pub target: String,
    pub scenario: String,
    pub started_unix_s: u64,
    pub duration_s: f64,
    /// The run id of the deploy that made the stack, when its record names one.
    pub deploy_run_id: Option<String>,
    /// The deployed stack's knobs (topology, instances, nginx variant, limits, …), from its record.
    pub knobs: BTreeMap<String, String>,
    /// Service → image digest (or id) of what ran.
    pub images: BTreeMap<String, String>,
    pub levels_asked: Vec<u64>,
    pub hold_s: f64,
    pub ramp_s: f64,
    pub sample_s: f64,
    pub settle_s: f64,
    pub slos: Slos,
    pub continue_after_fail: bool,
    pub levels: Vec<LevelResult>,
    pub verdict: Verdict,
    pub sampler: SamplerCost,
    /// The generator's CPUs (what its CPU % is a share of).
    pub generator_cpus: f64,
    /// What each container's CPU is a share of, in every figure of the bench (`cpu::CpuScale`).
    #[serde(default)]
    pub cpu_scale: CpuScale,
    /// The generator ran on the SUT host (a local target).
    #[serde(default)]
    pub generator_local: bool,
}

/// The file names a bench writes in its folder.
pub const RESULTS: &str = "results.json";
pub const TIMELINE: &str = "timeline.jsonl";
pub const REPORT: &str = "report.html";
