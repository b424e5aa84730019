//! The manifest: what `exectl prepare` writes and `exectl load` reads, one set of types for both.
//! Who logs in, with what password, into which project, and (with tokens) a JWT minted offline for
//! each account. Pure: the entries, the CSV form and the checks; reading and writing the files is the
//! callers' (`prepare::manifest` writes 0600 files, `load::manifest` reads and checks them).
//!
//! ```text
//! DIR/accounts.json  [{"email","password","projectUuid","role":"owner"|"collaborator"}]
//! DIR/accounts.csv   email,password,projectUuid,role           (the same accounts, for other tools)
//! DIR/projects.json  [{"uuid","ownerEmail"}]                   (the seed's shape)
//! DIR/tokens.json    [{"email","token"}]                       (only with --mint-tokens)
//! ```

use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};

pub const PROJECTS: &str = "projects.json";
pub const ACCOUNTS_JSON: &str = "accounts.json";
pub const ACCOUNTS_CSV: &str = "accounts.csv";
pub const TOKENS: &str = "tokens.json";
pub const ALL: [&str; 4] = [PROJECTS, ACCOUNTS_JSON, ACCOUNTS_CSV, TOKENS];

/// An account's part in its project.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Owner,
    Collaborator,
}

impl Role {
    pub fn name(self) -> &'static str {
        match self {
            Role::Owner => "owner",
            Role::Collaborator => "collaborator",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Account {
    pub email: String,
    pub password: String,
    pub project_uuid: String,
    pub role: Role,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Project {
    pub uuid: String,
    pub owner_email: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenEntry {
    pub email: String,
    pub token: String,
}

/// The room regex of the app is `project-([0-9a-f-]{36})`: prepare writes canonical lowercase
/// hyphenated uuids, and load refuses anything else.
pub fn is_canonical_uuid(s: &str) -> bool {
    uuid::Uuid::try_parse(s).is_ok_and(|u| u.hyphenated().to_string() == s)
}

/// CSV with a header; a field with a quote, comma or newline is quoted (the password may hold any).
pub fn accounts_csv(entries: &[Account]) -> String {
    let field = |s: &str| {
        if s.contains(['"', ',', '\n', '\r']) {
            format!("\"{}\"", s.replace('"', "\"\""))
        } else {
            s.to_string()
        }
    };
    let mut out = String::from("email,password,projectUuid,role\n");
    for a in entries {
        out.push_str(&format!(
            "{},{},{},{}\n",
            field(&a.email),
            field(&a.password),
            field(&a.project_uuid),
            a.role.name()
        ));
    }
    out
}

/// What is wrong with a manifest: the file (one of the names above), the value, the problem.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub file: &'static str,
    pub value: String,
    pub problem: String,
}

fn problem(file: &'static str, value: impl Into<String>, problem: impl Into<String>) -> Problem {
    Problem {
        file,
        value: value.into(),
        problem: problem.into(),
    }
}

/// Check a manifest read back: at least one account, each with an email and password and a listed
/// project; projects with canonical, distinct uuids; and, when `tokens` is given, a token for every
/// account. Returns the tokens in account order, moved out of the entries (a 50,000-account manifest
/// holds 16 MB of them: one copy is enough).
pub fn check(
    accounts: &[Account],
    projects: &[Project],
    tokens: Option<Vec<TokenEntry>>,
) -> Result<Option<Vec<String>>, Problem> {
    if accounts.is_empty() {
        return Err(problem(ACCOUNTS_JSON, "[]", "no accounts"));
    }
    let mut uuids = HashSet::new();
    for p in projects {
        if !is_canonical_uuid(&p.uuid) {
            return Err(problem(
                PROJECTS,
                &p.uuid,
                "not a canonical lowercase uuid (the app's room regex needs one)",
            ));
        }
        if !uuids.insert(p.uuid.as_str()) {
            return Err(problem(PROJECTS, &p.uuid, "project listed twice"));
        }
    }
    for a in accounts {
        if a.email.is_empty() || a.password.is_empty() {
            return Err(problem(ACCOUNTS_JSON, &a.email, "empty email or password"));
        }
        if !uuids.contains(a.project_uuid.as_str()) {
            return Err(problem(
                ACCOUNTS_JSON,
                &a.project_uuid,
                format!("account {} names a project absent from {PROJECTS}", a.email),
            ));
        }
    }
    let Some(entries) = tokens else {
        return Ok(None);
    };
    let mut by_email: HashMap<String, String> =
        entries.into_iter().map(|t| (t.email, t.token)).collect();
    // An account listed twice shares the token its first listing took.
    let mut taken: HashMap<&str, usize> = HashMap::new();
    let mut out: Vec<String> = Vec::with_capacity(accounts.len());
    for a in accounts {
        let token = match by_email.remove(a.email.as_str()) {
            Some(t) => {
                taken.insert(&a.email, out.len());
                t
            }
            None => taken
                .get(a.email.as_str())
                .map(|&i| out[i].clone())
                .unwrap_or_default(),
        };
        if token.is_empty() {
            return Err(problem(
                TOKENS,
                &a.email,
                "no token for this account (--tokens needs one per account)",
            ));
        }
        out.push(token);
    }
    Ok(Some(out))
}

/// Where the accounts' password came from: only the public default is printed back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PasswordFrom {
    Default,
    Flag,
    File,
}

/// The environment a k6 run of upstream's scripts (`test/load/k6`) reads against a prepared stack, and
/// what is left out of it (with why). Printed by `prepare` as shell lines and included in its `--json`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct K6Env {
    /// NAME, value, in the order printed.
    pub vars: Vec<(&'static str, String)>,
    /// NAME, why it is not given.
    pub withheld: Vec<(&'static str, String)>,
    pub notes: Vec<String>,
}

/// What a k6 user needs: the front door (`BASE_URL`, and `HOST_HEADER` where Traefik routes by Host:
/// upstream's default Host is the URL's, which Traefik does not route), the shape, the password when it
/// is the public default, and the real projects.json. `default_pattern` says whether the emails are the
/// `bench-user-{i}@exelearning.net` that upstream's scripts build.
pub struct K6Input<'a> {
    pub base_url: &'a str,
    pub host_header: Option<&'a str>,
    pub accounts: u64,
    pub users_per_project: u64,
    pub password: &'a str,
    pub password_from: PasswordFrom,
    pub projects_file: &'a str,
    pub pattern: &'a str,
    pub default_pattern: bool,
}

impl K6Env {
    /// `{"vars": {NAME: value}, "withheld": {NAME: why}, "notes": [..]}`, for `--json`.
    pub fn json(&self) -> serde_json::Value {
        let object = |v: &[(&str, String)]| {
            v.iter()
                .map(|(k, v)| (k.to_string(), serde_json::Value::from(v.as_str())))
                .collect::<serde_json::Map<_, _>>()
        };
        serde_json::json!({
            "vars": object(&self.vars),
            "withheld": object(&self.withheld),
            "notes": self.notes,
        })
    }
}

pub fn k6_env(i: &K6Input) -> K6Env {
    let mut vars = vec![("BASE_URL", i.base_url.trim_end_matches('/').to_string())];
    if let Some(h) = i.host_header {
        vars.push(("HOST_HEADER", h.to_string()));
    }
    vars.push(("BENCH_USER_COUNT", i.accounts.to_string()));
    vars.push(("USERS_PER_PROJECT", i.users_per_project.to_string()));
    let mut withheld = Vec::new();
    // A password the user chose is not echoed to a terminal or a CI log: they know it, and the
    // manifest (mode 0600) holds it. The default is public.
    match i.password_from {
        PasswordFrom::Default => vars.push(("BENCH_PASSWORD", i.password.to_string())),
        PasswordFrom::Flag => withheld.push((
            "BENCH_PASSWORD",
            "the one given by --password: not printed back; export it yourself".to_string(),
        )),
        PasswordFrom::File => withheld.push((
            "BENCH_PASSWORD",
            "the first line of --password-file: not printed; export it yourself".to_string(),
        )),
    }
    // Upstream's scripts (and their run.sh) read the projects from BENCH_PROJECTS_FILE, defaulting to
    // test/load/data/projects.json beside them; the file written may be anywhere.
    vars.push(("BENCH_PROJECTS_FILE", i.projects_file.to_string()));
    let mut notes = Vec::new();
    // Upstream's scripts build `${BENCH_USER_PREFIX}${i}@${BENCH_USER_DOMAIN}`: a pattern of that shape
    // is given to them as those two; any other cannot be.
    match i.pattern.split_once("{i}@") {
        _ if i.default_pattern => {}
        Some((prefix, domain)) if !domain.contains('@') => {
            vars.push(("BENCH_USER_PREFIX", prefix.to_string()));
            vars.push(("BENCH_USER_DOMAIN", domain.to_string()));
        }
        _ => notes.push(format!(
            "upstream's scripts log in as <BENCH_USER_PREFIX><i>@<BENCH_USER_DOMAIN>, which cannot give these accounts: {}",
            i.pattern
        )),
    }
    K6Env {
        vars,
        withheld,
        notes,
    }
}

/// `s` as one shell word: single quotes, a quote inside as `'\''`.
pub fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// The env as lines to paste into a shell: `export NAME='value'`, then `# NAME: why` for what is withheld.
pub fn k6_env_lines(env: &K6Env) -> Vec<String> {
    env.vars
        .iter()
        .map(|(k, v)| format!("export {k}={}", shell_quote(v)))
        .chain(env.withheld.iter().map(|(k, why)| format!("# {k}: {why}")))
        .chain(env.notes.iter().map(|n| format!("# note: {n}")))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const U1: &str = "0b8e6f6e-8a43-4f55-9d3c-2f1b7b0a9e11";

    fn account(email: &str, role: Role) -> Account {
        Account {
            email: email.into(),
            password: "pw,\"x".into(),
            project_uuid: U1.into(),
            role,
        }
    }

    #[test]
    fn entries_round_trip_through_json() {
        let accounts = vec![
            account("a@x.org", Role::Owner),
            account("b@x.org", Role::Collaborator),
        ];
        let projects = vec![Project {
            uuid: U1.into(),
            owner_email: "a@x.org".into(),
        }];
        let tokens = vec![TokenEntry {
            email: "a@x.org".into(),
            token: "t".into(),
        }];
        let back: Vec<Account> =
            serde_json::from_str(&serde_json::to_string(&accounts).unwrap()).unwrap();
        assert_eq!(back, accounts);
        let back: Vec<Project> =
            serde_json::from_str(&serde_json::to_string(&projects).unwrap()).unwrap();
        assert_eq!(back, projects);
        let back: Vec<TokenEntry> =
            serde_json::from_str(&serde_json::to_string(&tokens).unwrap()).unwrap();
        assert_eq!(back, tokens);
        // The field names load and other tools read.
        let v = serde_json::to_value(&accounts[1]).unwrap();
        assert_eq!(v["role"], "collaborator");
        assert_eq!(v["projectUuid"], U1);
        let v = serde_json::to_value(&projects[0]).unwrap();
        assert_eq!(v, serde_json::json!({"uuid": U1, "ownerEmail": "a@x.org"}));
        assert_eq!(check(&accounts, &projects, None), Ok(None));
    }

    #[test]
    fn csv_quotes_what_needs_it() {
        let accounts = [
            account("a@x.org", Role::Owner),
            account("b@x.org", Role::Collaborator),
        ];
        assert_eq!(
            accounts_csv(&accounts),
            format!(
                "email,password,projectUuid,role\na@x.org,\"pw,\"\"x\",{U1},owner\nb@x.org,\"pw,\"\"x\",{U1},collaborator\n"
            )
        );
    }

    #[test]
    fn canonical_uuid() {
        assert!(is_canonical_uuid(U1));
        for bad in [
            U1.to_uppercase(),
            U1.replace('-', "x"),
            U1.replace('-', ""),
            format!("{{{U1}}}"),
            format!("urn:uuid:{U1}"),
            "short".into(),
        ] {
            assert!(!is_canonical_uuid(&bad), "{bad}");
        }
    }

    #[test]
    fn checks_name_the_file() {
        let projects = [Project {
            uuid: U1.into(),
            owner_email: "a@x.org".into(),
        }];
        let a = [account("a@x.org", Role::Owner)];
        assert_eq!(check(&[], &projects, None).unwrap_err().file, ACCOUNTS_JSON);
        let upper = [Project {
            uuid: U1.to_uppercase(),
            ..projects[0].clone()
        }];
        assert_eq!(check(&a, &upper, None).unwrap_err().file, PROJECTS);
        let twice = [projects[0].clone(), projects[0].clone()];
        assert!(check(&a, &twice, None)
            .unwrap_err()
            .problem
            .contains("twice"));
        let entry = |email: &str, token: &str| TokenEntry {
            email: email.into(),
            token: token.into(),
        };
        let e = check(&a, &projects, Some(vec![entry("z@x.org", "t")])).unwrap_err();
        assert_eq!((e.file, e.value.as_str()), (TOKENS, "a@x.org"));
        // Tokens come back in account order; an account listed twice gets its token twice.
        let ab = [
            account("b@x.org", Role::Owner),
            account("a@x.org", Role::Owner),
            account("b@x.org", Role::Owner),
        ];
        let entries = vec![entry("a@x.org", "ta"), entry("b@x.org", "tb")];
        assert_eq!(
            check(&ab, &projects, Some(entries)),
            Ok(Some(vec!["tb".into(), "ta".into(), "tb".into()]))
        );
        let empty = vec![entry("a@x.org", "")];
        assert_eq!(
            check(&a, &projects, Some(empty)).unwrap_err().value,
            "a@x.org"
        );
    }

    fn k6_input(from: PasswordFrom) -> K6Input<'static> {
        K6Input {
            base_url: "http://127.0.0.1:21200/",
            host_header: Some("k-x.localhost"),
            accounts: 8,
            users_per_project: 2,
            password: "it's",
            password_from: from,
            projects_file: "/s/m/projects.json",
            pattern: "bench-user-{i}@exelearning.net",
            default_pattern: true,
        }
    }

    #[test]
    fn k6_env_for_a_single_stack() {
        let env = k6_env(&k6_input(PasswordFrom::Default));
        assert_eq!(
            k6_env_lines(&env),
            [
                "export BASE_URL='http://127.0.0.1:21200'",
                "export HOST_HEADER='k-x.localhost'",
                "export BENCH_USER_COUNT='8'",
                "export USERS_PER_PROJECT='2'",
                "export BENCH_PASSWORD='it'\\''s'",
                "export BENCH_PROJECTS_FILE='/s/m/projects.json'",
            ]
        );
        let ha = k6_env(&K6Input {
            host_header: None,
            default_pattern: false,
            pattern: "team-{i}@x.org",
            ..k6_input(PasswordFrom::Default)
        });
        assert!(ha.vars.iter().all(|(k, _)| *k != "HOST_HEADER"));
        assert!(ha.notes.is_empty(), "{:?}", ha.notes);
        let var = |e: &K6Env, k: &str| e.vars.iter().find(|(n, _)| *n == k).map(|(_, v)| v.clone());
        assert_eq!(var(&ha, "BENCH_USER_PREFIX").as_deref(), Some("team-"));
        assert_eq!(var(&ha, "BENCH_USER_DOMAIN").as_deref(), Some("x.org"));
        let other = k6_env(&K6Input {
            default_pattern: false,
            pattern: "u{i}x@x.org",
            ..k6_input(PasswordFrom::Default)
        });
        assert_eq!(var(&other, "BENCH_USER_PREFIX"), None);
        assert!(other.notes[0].contains("u{i}x@x.org"), "{:?}", other.notes);
        let j = env.json();
        assert_eq!(j["vars"]["HOST_HEADER"], "k-x.localhost");
        assert_eq!(j["vars"]["BENCH_USER_COUNT"], "8");
        assert_eq!(j["withheld"], serde_json::json!({}));
    }

    #[test]
    fn k6_env_prints_only_the_default_password() {
        for from in [PasswordFrom::Flag, PasswordFrom::File] {
            let env = k6_env(&k6_input(from));
            let lines = k6_env_lines(&env).join("\n");
            assert!(!lines.contains("it'"), "{lines}");
            assert!(lines.contains("# BENCH_PASSWORD: "), "{lines}");
            assert!(env.vars.iter().all(|(k, _)| *k != "BENCH_PASSWORD"));
        }
    }
}
