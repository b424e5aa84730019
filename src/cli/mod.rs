//! The command line: clap's definitions (here and in `host`, `spec`, `target`), and the one place flags
//! become options (`options`, over `values`, `spec` and `target`): values stay text in the definitions
//! and are read by `exectl_core::units` and `spec::resolve`, so flag and exectl.yaml errors read the
//! same. Value names say their kind (DURATION, SIZE, N, CPUS): tests/bad_values.rs walks them all.
//! Nothing below `cli` sees clap: operations take options structs.

pub mod bench_flags;
pub mod host;
pub mod options;
pub mod spec;
pub mod target;

pub use bench_flags::{BenchFlags, WorkloadFlags};
use clap::{Args, Parser, Subcommand};
use spec::SpecArgs;
use std::path::PathBuf;
use target::TargetArgs;

#[derive(Debug, Parser)]
#[command(
    name = "exectl",
    version,
    about = "Reproducible C10k benchmark stacks for eXeLearning"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Render the stack's files (compose.yaml, .env, nginx.conf, Traefik config, exectl.lock.json).
    Render(RenderArgs),
    /// Render into a temporary folder and check every file (typed re-parse, nginx -t, docker-compose).
    Validate(ValidateArgs),
    /// Render, check the target, and converge its engine on the stack (create / recreate / keep / remove).
    Deploy(DeployArgs),
    /// Show what deploy would do, without changing anything.
    Plan(PlanArgs),
    /// Remove the stack's containers and network; its volumes too with --purge.
    Teardown(TeardownArgs),
    /// Health, resources, limits in effect and per-instance WebSocket counts (the leak check).
    Status(StatusArgs),
    /// Recorded deploys: list, show, and diff two of them.
    Runs(RunsArgs),
    /// Generate load on a stack: idle sockets, a login burst, collaboration or the editing mix.
    Load(LoadArgs),
    /// Run the benchmark: levels of users, the SUT sampled on one clock, a leak check after each level,
    /// the capacity and the limiting component, and an HTML report.
    Bench(BenchArgs),
    /// One variable at a time: deploy, prepare and bench the stack at each value of one setting (or
    /// image, or app variable), check nothing else moved, and compare: capacity, levels side by side,
    /// repeats' ranges, an HTML report.
    Sweep(Box<SweepArgs>),
    /// A study in one command: a campaign file's rows (benches and sweeps, each on a stack of its
    /// topology) run in order, then its summary table, findings and what was not measured, in
    /// report.md and report.html.
    Campaign(Box<CampaignArgs>),
    /// Rebuild a bench's report.html from its results.json and timeline.
    Report(ReportArgs),
    /// Seed benchmark accounts and projects into a deployed stack's database, write the manifest, verify.
    Prepare(PrepareArgs),
    /// Tune (or check, or restore) the host's kernel and engine settings for a C10k benchmark.
    Host(crate::cli::host::HostArgs),
    /// Find what would distort a benchmark on the target: SSH, engine, capacity, limits, neighbours, disks.
    Doctor(crate::cli::host::DoctorArgs),
    /// One slice of a load run over several processes (started by `load --processes`; its spec on stdin).
    #[command(hide = true)]
    LoadSlice,
}

/// `exectl prepare`: values stay text here and are checked in `commands::prepare` (exit 2 naming the flag).
#[derive(Debug, Args)]
pub struct PrepareArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// Deployed stack to seed [default: exe].
    #[arg(long)]
    pub stack: Option<String>,
    /// Accounts to make (required unless --reset).
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub accounts: Option<String>,
    /// Projects (M): account a joins project a mod M [default: accounts / users-per-project, rounded up].
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub projects: Option<String>,
    /// Most members per project (K): the owner plus collaborators [default: accounts / projects, rounded up].
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub users_per_project: Option<String>,
    /// Password of every account [default: Bench1234!]; written to the manifest only, never printed.
    #[arg(long, conflicts_with = "password_file")]
    pub password: Option<String>,
    /// Read the password from the first line of this file.
    #[arg(long, value_name = "FILE")]
    pub password_file: Option<PathBuf>,
    /// Projects' visibility: private (members only) or public (anyone joins).
    #[arg(long, default_value = "private")]
    pub visibility: String,
    /// Account emails; {i} is the account number from 0.
    #[arg(long, default_value = crate::prepare::plan::DEFAULT_PATTERN)]
    pub email_pattern: String,
    /// bcrypt cost of the password hash [default: 10, the app's].
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub bcrypt_cost: Option<String>,
    /// Also write the manifest files here (the stack's folder always keeps one per --email-pattern).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Also write tokens.json: a JWT per account, signed with the stack's API_JWT_SECRET.
    #[arg(long)]
    pub mint_tokens: bool,
    /// Lifetime of the minted tokens, e.g. 3600s, 12h, 7d [default: 7d, as the app's login].
    #[arg(
        long,
        requires = "mint_tokens",
        value_name = "DURATION",
        allow_hyphen_values = true
    )]
    pub token_ttl: Option<String>,
    /// Remove the accounts (and their projects) that prepare made with this --email-pattern, and that
    /// pattern's manifest (in the stack's folder, and in --out DIR if given).
    #[arg(long, conflicts_with_all = ["accounts", "projects", "users_per_project", "mint_tokens"])]
    pub reset: bool,
    /// Rows per transaction [default: 5000].
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub batch_size: Option<String>,
    /// How long to wait for the app's tables to appear [default: 60s].
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true)]
    pub schema_timeout: Option<String>,
    /// Take over the stack's lock even if another exectl holds it.
    #[arg(long)]
    pub break_lock: bool,
    /// How to make the rows: sql (straight into the database, in bulk) or api (the app's admin HTTP API
    /// through the front door; slower, same manifest).
    #[arg(long, default_value = "sql")]
    pub via: String,
    /// Print a machine-readable summary (and no progress).
    #[arg(long)]
    pub json: bool,
}

/// `exectl bench`: values stay text here and are checked in `commands::bench` (exit 2 naming the flag).
#[derive(Debug, Args)]
pub struct BenchArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// Deployed (and prepared) stack to measure [default: exe].
    #[arg(long)]
    pub stack: Option<String>,
    /// User counts, ascending, e.g. 100,500,1000,2500.
    #[arg(long, value_name = "N,N,...")]
    pub levels: String,
    #[command(flatten)]
    pub flags: BenchFlags,
    /// This bench's id [default: B-SCENARIO-UNIXTIME].
    #[arg(long)]
    pub run_id: Option<String>,
    /// Print results.json on stdout (no progress lines).
    #[arg(long)]
    pub json: bool,
    /// Folder for results.json, timeline.jsonl and report.html [default: STATE/benches/RUN_ID].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

/// `exectl sweep`: values stay text here and are checked in `cli::options::sweep` (exit 2 naming the
/// flag, before the first deploy).
#[derive(Debug, Args, Clone)]
pub struct SweepArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// The stack as every point shares it (exectl.yaml, then these flags); the variable is set on top.
    #[command(flatten)]
    pub spec: SpecArgs,
    /// The variable and its values, VAR=V1,V2,...: a spec setting by its exectl.yaml key (instances,
    /// nginx, worker_connections, cpus, memory, db, nofile, ...), image.SERVICE or env.NAME. Twice with
    /// --matrix.
    #[arg(long, value_name = "VAR=V1,V2,...")]
    pub vary: Vec<String>,
    /// The sweep's flags as a YAML file (vary, matrix, repeat, levels, find_capacity, find_room); flags
    /// win.
    #[arg(long, value_name = "FILE")]
    pub sweep_file: Option<PathBuf>,
    /// Two variables, every pair of their values, reported as a grid.
    #[arg(long)]
    pub matrix: bool,
    /// Runs of each value [default: 1]: the comparison reports median and range.
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub repeat: Option<String>,
    /// The levels of each point's bench, ascending, e.g. 100,500,1000.
    #[arg(long, value_name = "N,N,...", conflicts_with = "find_capacity")]
    pub levels: Option<String>,
    /// Search each value's capacity instead of fixed levels: grow ×2 from --from until a level fails
    /// (or --to passes), then bisect to --precision.
    #[arg(long)]
    pub find_capacity: bool,
    /// Search each value's largest room instead: the most users per project whose level of --users
    /// users at once meets every objective (collab or editing: deliveries in time), grown ×2 from
    /// --from until a room fails (or --to passes), then bisected to --precision; each room size seeds
    /// a manifest of its own.
    #[arg(long, conflicts_with_all = ["find_capacity", "levels"])]
    pub find_room: bool,
    /// With --find-room: the users at once of every probe (the accounts prepared).
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub users: Option<String>,
    /// The search's first level [default: 100], or with --find-room its first room size [default: 2].
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub from: Option<String>,
    /// The search's last level (the accounts prepared), or with --find-room its largest room size.
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub to: Option<String>,
    /// Stop bisecting when the gap is within this percent of the last pass, with its % (e.g. 5%)
    /// [default: 10%].
    #[arg(long, value_name = "PERCENT", allow_hyphen_values = true)]
    pub precision: Option<String>,
    #[command(flatten)]
    pub bench: BenchFlags,
    #[command(flatten)]
    pub deploy: DeployFlags,
    /// Tear the stack down at the end (its data kept) instead of leaving it at the last value.
    #[arg(long)]
    pub teardown: bool,
    /// bcrypt cost of the accounts' password hashes when they are seeded [default: 10, the app's].
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub bcrypt_cost: Option<String>,
    /// This sweep's id [default: S-VAR-UNIXTIME].
    #[arg(long)]
    pub run_id: Option<String>,
    /// Folder for results.json, report.html and points/ [default: STATE/sweeps/RUN_ID].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Go on with the sweep RUN_ID (interrupted, killed or stopped): its points are kept, the next runs,
    /// as begun (its folder, its flags); a --set-secret is read from the stack's .env, or given again.
    #[arg(long, value_name = "RUN_ID", conflicts_with_all = ["vary", "sweep_file", "run_id", "out"])]
    pub resume: Option<String>,
    /// Print results.json on stdout (no progress lines).
    #[arg(long)]
    pub json: bool,
}

/// `exectl campaign`: values stay text here and are checked in `cli::options::campaign` (exit 2 naming
/// the row and the key, before anything is connected to).
#[derive(Debug, Args)]
pub struct CampaignArgs {
    /// The campaign file (YAML: campaigns/quick.yaml, campaigns/seed-000.yaml; README's campaign
    /// section has its keys).
    #[arg(value_name = "FILE", required_unless_present = "resume")]
    pub file: Option<PathBuf>,
    /// Say the rows, the deploys each needs and how long each and the whole should take; connect to
    /// nothing, run nothing.
    #[arg(long)]
    pub plan: bool,
    /// The rows' stacks are NAME-single and NAME-ha [default: the file's `stack`, else its `name`].
    #[arg(long, value_name = "NAME")]
    pub stack: Option<String>,
    /// Port Traefik publishes, over the file's (single rows).
    #[arg(long, value_name = "PORT", allow_hyphen_values = true)]
    pub http_port: Option<String>,
    /// Port nginx publishes, over the file's (ha rows).
    #[arg(long, value_name = "PORT", allow_hyphen_values = true)]
    pub lb_port: Option<String>,
    #[command(flatten)]
    pub target: TargetArgs,
    /// This campaign's id [default: C-NAME-UNIXTIME].
    #[arg(long)]
    pub run_id: Option<String>,
    /// Folder for results.json, report.md, report.html and rows/ [default: STATE/campaigns/RUN_ID].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Go on with the campaign RUN_ID (stopped or killed): its ended rows are kept, the next runs; its
    /// file must be as it was.
    #[arg(long, value_name = "RUN_ID", conflicts_with_all = ["file", "run_id", "out", "stack", "http_port", "lb_port"])]
    pub resume: Option<String>,
    /// Tear each stack down (its data kept) after the last row that runs on it, and at the end any
    /// of the campaign's stacks still up (as the file's `teardown: true`); without it the end says
    /// which stacks are left running and the command that removes each.
    #[arg(long)]
    pub teardown: bool,
    /// Print results.json (with --plan: the plan) on stdout (no progress lines).
    #[arg(long)]
    pub json: bool,
}

/// `exectl report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The bench's run id (its folder under STATE/benches).
    #[arg(value_name = "RUN_ID")]
    pub run_id: String,
    /// Read the bench from this folder instead (a bench run with --out).
    #[arg(long, value_name = "DIR")]
    pub from: Option<PathBuf>,
    /// Write the HTML here [default: report.html beside results.json].
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

/// `exectl load`: values stay text here and are read by `cli::options::load::request` and `ops::load_plan`
/// (exit 2 naming the flag).
#[derive(Debug, Args, Clone)]
pub struct LoadArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// idle, login-burst, collab or editing.
    #[arg(value_name = "SCENARIO")]
    pub scenario: String,
    /// Deployed stack whose front door gets the load.
    #[arg(long, conflicts_with = "url")]
    pub stack: Option<String>,
    /// Front door to load: loopback (http://127.0.0.1:8090, http://exe.localhost:8080 — a `*.localhost`
    /// name is dialled on 127.0.0.1 and sent as Host) or the stack's target only.
    #[arg(long)]
    pub url: Option<String>,
    /// Host header to send with --url (a Host-routed front door such as Traefik reached by address).
    #[arg(long, value_name = "NAME", requires = "url")]
    pub host_header: Option<String>,
    /// Folder with accounts.json, projects.json (and tokens.json) written by `exectl prepare`
    /// [default: with --stack, the stack's newest manifest, else ./manifest].
    #[arg(long, value_name = "DIR")]
    pub manifest: Option<PathBuf>,
    /// Users (accounts 0..N of the manifest) [default: every account].
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub users: Option<String>,
    /// The workload (hold, ramp, churn, …: the bench settings `exectl load` takes).
    #[command(flatten)]
    pub workload: WorkloadFlags,
    /// A user whose socket drops before the hold ends dials again as the real client does (y-websocket:
    /// 100 ms, doubling to 2.5 s between tries, the same token) until it is open again or the hold ends;
    /// the summary counts the drops and how long each took to come back.
    #[arg(long)]
    pub reconnect: bool,
    /// Run id tagging the summary [default: SCENARIO-USERS-UNIXTIME].
    #[arg(long)]
    pub run_id: Option<String>,
    /// Print the summary as JSON on stdout (the text summary goes to stderr).
    #[arg(long)]
    pub json: bool,
    /// Also write the JSON summary to this file.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// No per-second progress line on stderr.
    #[arg(long)]
    pub quiet: bool,
}

/// How a deploy converges: deploy's flags, and each sweep point's deploy.
#[derive(Debug, Args, Clone)]
pub struct DeployFlags {
    /// How long each deploy may wait for every service to be healthy.
    #[arg(
        long,
        default_value = "300s",
        value_name = "DURATION",
        allow_hyphen_values = true
    )]
    pub wait_timeout: String,
    /// Send missing images from the local engine to a remote target (on a swarm: to every node that
    /// runs a service of them).
    #[arg(long)]
    pub load_images: bool,
}

#[derive(Debug, Args)]
pub struct DeployArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    #[command(flatten)]
    pub spec: SpecArgs,
    #[command(flatten)]
    pub deploy: DeployFlags,
    /// Take over the stack's lock even if another exectl holds it.
    #[arg(long)]
    pub break_lock: bool,
    /// On a swarm target, where a service goes: SERVICE=NODE, or app=NODE,NODE,... for the instances
    /// round-robin (repeat) [default: instances round-robin over the nodes labelled exectl.role=app,
    /// the rest on the manager the target names].
    #[arg(long, value_name = "SERVICE=NODE[,NODE...]")]
    pub place: Vec<String>,
    /// Print a machine-readable summary (and no progress).
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct PlanArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    #[command(flatten)]
    pub spec: SpecArgs,
    /// As deploy's --place (a swarm target only).
    #[arg(long, value_name = "SERVICE=NODE[,NODE...]")]
    pub place: Vec<String>,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct TeardownArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// Stack name [default: exe].
    #[arg(long)]
    pub stack: Option<String>,
    /// Also remove the stack's volumes (its data) and local state.
    #[arg(long)]
    pub purge: bool,
    /// Take over the stack's lock even if another exectl holds it.
    #[arg(long)]
    pub break_lock: bool,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct RenderArgs {
    #[command(flatten)]
    pub spec: SpecArgs,
    /// Folder to write the bundle into.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Print a machine-readable summary.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ValidateArgs {
    #[command(flatten)]
    pub spec: SpecArgs,
    /// Print a machine-readable report.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct StatusArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// Stack name [default: exe].
    #[arg(long)]
    pub stack: Option<String>,
    /// Print the stable JSON report.
    #[arg(long)]
    pub json: bool,
    /// Refresh until interrupted.
    #[arg(long)]
    pub watch: bool,
    /// Refresh interval with --watch.
    #[arg(
        long,
        default_value = "2s",
        value_name = "DURATION",
        allow_hyphen_values = true
    )]
    pub interval: String,
    /// Exit 1 unless every instance reports 0 connections and 0 rooms (within --settle).
    #[arg(long)]
    pub expect_idle: bool,
    /// How long --expect-idle waits for sockets to close and rooms to be cleaned up.
    #[arg(
        long,
        default_value = "45s",
        value_name = "DURATION",
        allow_hyphen_values = true
    )]
    pub settle: String,
    /// Exit 1 unless every service is healthy (or running, without a healthcheck).
    #[arg(long)]
    pub expect_healthy: bool,
}

#[derive(Debug, Args)]
pub struct RunsArgs {
    #[command(subcommand)]
    pub command: RunsCommand,
}

#[derive(Debug, Subcommand)]
pub enum RunsCommand {
    /// Every recorded run.
    List {
        #[arg(long)]
        json: bool,
    },
    /// One record in full.
    Show { id: String },
    /// The variables that differ between two runs.
    Diff {
        a: String,
        b: String,
        #[arg(long)]
        json: bool,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use exectl_core::spec::Origin;
    use exectl_core::spec_settings::{Kind as SettingKind, SETTINGS};

    /// Every flag of the table parses into its own setting, named by its flag; numbers may be negative
    /// (the checker refuses them with exit 2, naming the flag).
    #[test]
    fn every_setting_flag_reaches_its_setting() {
        let mut argv = vec![
            "exectl".to_string(),
            "render".into(),
            "--out".into(),
            "x".into(),
        ];
        for s in SETTINGS {
            match (s.kind, s.long()) {
                (SettingKind::Positional, _) => argv.push(format!("v-{}", s.key)),
                (SettingKind::Switch, _) => argv.push(s.flag.into()),
                (SettingKind::Number, _) => argv.extend([s.flag.into(), format!("-{}", s.key)]),
                (_, Some(_)) => argv.extend([s.flag.into(), format!("v-{}", s.key)]),
                (_, None) => {}
            }
        }
        let Command::Render(args) = Cli::try_parse_from(&argv).unwrap().command else {
            panic!("not render")
        };
        let mut input = args.spec.to_input().unwrap();
        for s in SETTINGS {
            let want = match s.kind {
                SettingKind::FileOnly => None,
                SettingKind::Switch => Some("true".to_string()),
                SettingKind::Number => Some(format!("-{}", s.key)),
                _ => Some(format!("v-{}", s.key)),
            };
            let got = (s.slot)(&mut input).take();
            assert_eq!(got.as_ref().map(|r| r.value.clone()), want, "{}", s.key);
            if let Some(r) = got {
                assert_eq!(r.origin, Origin::Flag(s.flag));
            }
        }
    }

    #[test]
    fn the_command_line_is_well_formed() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
