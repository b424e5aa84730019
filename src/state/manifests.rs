//! Where a stack's manifests live: one folder per email pattern, `<stack dir>/manifests/<pattern>/`,
//! each with a `pattern.json` naming its pattern, its counts and when it was written. A second pattern
//! never replaces the first, and `load --stack` takes the newest (or `--pattern` picks one) of those the
//! user prepared: a room size's manifest a sweep (or a campaign's row) seeded is marked so in its
//! pattern.json and is read only by `--pattern`, so that the stack's default stays the user's.
//!
//! Stacks prepared before kept one manifest in the stack's folder itself (the legacy place): load still
//! reads it there, and the next prepare moves it into its pattern's folder (the pattern is read off its
//! emails, which are `pattern.email(0..N)` in order).
//!
//! Pure: `slug`, `infer_pattern`, `still_there`, `choose`. The rest reads or moves files.

use anyhow::{Context, Result};
use exectl_core::error::UsageError;
use exectl_core::manifest;
use exectl_core::seed::plan::EmailPattern;
use serde::{Deserialize, Serialize};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

pub const DIR: &str = "manifests";
pub const META: &str = "pattern.json";

/// `pattern.json`: what a manifest folder describes. Written last, so a folder without it is a write
/// that did not finish.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Meta {
    pub pattern: String,
    pub accounts: u64,
    pub projects: u64,
    /// sql or api; none for a manifest moved from the legacy place.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<String>,
    /// Epoch milliseconds: the newest is the stack's latest.
    pub written_ms: i64,
    /// The `--out` folder that got the same files, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub out: Option<PathBuf>,
    /// The room size (users to a project) a sweep seeded this manifest for: never the stack's default.
    /// Marked in the file the manifest is finished by, so no step after it (which a Ctrl-C could skip)
    /// has to hand the default back. None: prepared by the user (or written before the mark).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep_room: Option<u64>,
}

/// A folder name for a pattern: the pattern itself, with every byte outside `[A-Za-z0-9@._+{}-]` as
/// `%XX` (a pattern has no `%`, so this is one-to-one); a long one is cut and ends in a hash of the whole.
pub fn slug(pattern: &str) -> String {
    let mut s = String::new();
    for b in pattern.bytes() {
        if b.is_ascii_alphanumeric() || b"@._+{}-".contains(&b) {
            s.push(b as char);
        } else {
            s.push_str(&format!("%{b:02X}"));
        }
    }
    if s.len() > 200 {
        use sha2::Digest;
        let h = hex::encode(sha2::Sha256::digest(pattern.as_bytes()));
        s.truncate(150);
        s.push('~');
        s.push_str(&h[..32]);
    }
    s
}

/// The folder of this pattern's manifest in the stack's folder.
pub fn folder(stack_dir: &Path, pattern: &EmailPattern) -> PathBuf {
    stack_dir.join(DIR).join(slug(&pattern.text()))
}

/// The pattern whose emails `0..N` are exactly these, in order. With several candidates (a short list
/// whose first email has more than one `0`), the hint when it is one of them, else none.
pub fn infer_pattern(emails: &[&str], hint: Option<&EmailPattern>) -> Option<EmailPattern> {
    let first = emails.first()?;
    let fits = |p: &EmailPattern| {
        emails
            .iter()
            .enumerate()
            .all(|(i, e)| *e == p.email(i as u64))
    };
    let candidates: Vec<EmailPattern> = first
        .match_indices('0')
        .map(|(i, _)| EmailPattern {
            prefix: first[..i].to_string(),
            suffix: first[i + 1..].to_string(),
        })
        .filter(fits)
        .collect();
    match (candidates.len(), hint) {
        (1, _) => candidates.into_iter().next(),
        (_, Some(h)) if candidates.contains(h) => Some(h.clone()),
        _ => None,
    }
}

/// How many of `remaining` (emails of the database) are accounts `0..n` of the pattern: rows a manifest
/// of `n` accounts still describes.
pub fn still_there(pattern: &EmailPattern, n: u64, remaining: &[&str]) -> u64 {
    remaining
        .iter()
        .filter(|e| {
            let Some(mid) = e
                .strip_prefix(pattern.prefix.as_str())
                .and_then(|r| r.strip_suffix(pattern.suffix.as_str()))
            else {
                return false;
            };
            let canonical = !mid.is_empty()
                && mid.bytes().all(|b| b.is_ascii_digit())
                && (mid == "0" || !mid.starts_with('0'));
            canonical && mid.parse::<u64>().is_ok_and(|i| i < n)
        })
        .count() as u64
}

/// A manifest folder of the stack with its pattern.json.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub dir: PathBuf,
    pub meta: Meta,
}

/// The stack's manifest folders that finished writing, newest first.
pub fn list(stack_dir: &Path) -> Vec<Entry> {
    let mut out: Vec<Entry> = std::fs::read_dir(stack_dir.join(DIR))
        .into_iter()
        .flatten()
        .filter_map(|e| {
            let dir = e.ok()?.path();
            let meta = read_meta(&dir)?;
            dir.join(manifest::ACCOUNTS_JSON)
                .exists()
                .then_some(Entry { dir, meta })
        })
        .collect();
    out.sort_by(|a, b| {
        b.meta
            .written_ms
            .cmp(&a.meta.written_ms)
            .then_with(|| a.dir.cmp(&b.dir))
    });
    out
}

pub fn read_meta(dir: &Path) -> Option<Meta> {
    serde_json::from_str(&std::fs::read_to_string(dir.join(META)).ok()?).ok()
}

/// The stack's folder holds a manifest of the layout before per-pattern folders.
pub fn legacy(stack_dir: &Path) -> Option<PathBuf> {
    stack_dir
        .join(manifest::ACCOUNTS_JSON)
        .exists()
        .then(|| stack_dir.to_path_buf())
}

/// The manifest `load --stack` reads: `--pattern`'s, else the newest the user prepared (a sweep's room
/// size is taken only by name). Pure over what `list` and `legacy` found. An unknown pattern, a choice
/// between a legacy manifest and per-pattern ones, only a sweep's room sizes, or no manifest at all is
/// a UsageError naming the choices.
pub fn choose(
    stack: &str,
    entries: &[Entry],
    legacy: Option<&Path>,
    pattern: Option<&str>,
) -> Result<PathBuf, UsageError> {
    let mut choices: Vec<String> = entries
        .iter()
        .map(|e| {
            let room = match e.meta.sweep_room {
                Some(k) => format!(", seeded by a sweep for rooms of {k}"),
                None => String::new(),
            };
            format!(
                "--pattern {} ({} accounts{room})",
                e.meta.pattern, e.meta.accounts
            )
        })
        .collect();
    if let Some(l) = legacy {
        choices.push(format!(
            "--manifest {} (written before per-pattern manifests)",
            l.display()
        ));
    }
    let listed = if choices.is_empty() {
        "none".to_string()
    } else {
        choices.join(", ")
    };
    match pattern {
        Some(p) => entries
            .iter()
            .find(|e| e.meta.pattern == p || e.dir.file_name() == Some(std::ffi::OsStr::new(p)))
            .map(|e| e.dir.clone())
            .ok_or_else(|| {
                UsageError::new(
                    "--pattern",
                    p,
                    format!("stack {stack} has no manifest of this pattern; it has: {listed}"),
                    format!(
                        "pass one of those, or seed it: exectl prepare --stack {stack} --email-pattern '{p}' --accounts N"
                    ),
                )
            }),
        None => match (entries.iter().find(|e| e.meta.sweep_room.is_none()), legacy) {
            (Some(e), None) => Ok(e.dir.clone()),
            (None, Some(l)) => Ok(l.to_path_buf()),
            (Some(_), Some(_)) => Err(UsageError::new(
                "--stack",
                stack,
                format!("more than one manifest and none is known to be the latest: {listed}"),
                "pick one with --pattern P or --manifest DIR (the next exectl prepare moves the old one into its pattern's folder)",
            )),
            (None, None) if !entries.is_empty() => Err(UsageError::new(
                "--stack",
                stack,
                format!("its only manifests are the room sizes a sweep seeded: {listed}"),
                format!(
                    "pick one with --pattern P, or prepare the stack's own: exectl prepare --stack {stack} --accounts N"
                ),
            )),
            (None, None) => Err(UsageError::new(
                "--stack",
                stack,
                "no manifest: prepare has not seeded this stack",
                format!("exectl prepare --stack {stack} --accounts N (or give --manifest DIR)"),
            )),
        },
    }
}

/// `load --stack S [--pattern P]`: the folder to read.
pub fn locate(stack: &str, stack_dir: &Path, pattern: Option<&str>) -> Result<PathBuf, UsageError> {
    choose(
        stack,
        &list(stack_dir),
        legacy(stack_dir).as_deref(),
        pattern,
    )
}

/// Create a folder readable by its owner only (the manifests hold passwords and tokens).
pub fn private_dir(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
        .with_context(|| format!("restricting {}", dir.display()))
}

pub fn write_meta(dir: &Path, meta: &Meta) -> Result<PathBuf> {
    write_private(dir, META, &serde_json::to_vec_pretty(meta)?)
}

fn emails_of(dir: &Path) -> Option<Vec<String>> {
    let text = std::fs::read_to_string(dir.join(manifest::ACCOUNTS_JSON)).ok()?;
    let v: Vec<manifest::Account> = serde_json::from_str(&text).ok()?;
    Some(v.into_iter().map(|a| a.email).collect())
}

fn count_of(dir: &Path, file: &str) -> u64 {
    std::fs::read_to_string(dir.join(file))
        .ok()
        .and_then(|t| serde_json::from_str::<Vec<serde_json::Value>>(&t).ok())
        .map_or(0, |v| v.len() as u64)
}

/// Which pattern a folder's manifest is of and how many accounts it lists: its pattern.json, else read
/// off its accounts.json. None when it holds no manifest (or one whose pattern cannot be told).
pub fn identify(dir: &Path, hint: Option<&EmailPattern>) -> Option<(String, u64)> {
    if let Some(m) = read_meta(dir) {
        return Some((m.pattern, m.accounts));
    }
    let emails = emails_of(dir)?;
    let refs: Vec<&str> = emails.iter().map(String::as_str).collect();
    infer_pattern(&refs, hint).map(|p| (p.text(), emails.len() as u64))
}

/// What became of a manifest in the legacy place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Migration {
    None,
    Moved(PathBuf),
    /// Left where it is, with the reason.
    Left(String),
}

/// Move a legacy manifest into its pattern's folder (files first, accounts.json last, pattern.json at
/// the end: a move cut short is finished by the next run). Never deletes one.
pub fn migrate_legacy(stack_dir: &Path, hint: Option<&EmailPattern>) -> Result<Migration> {
    let Some(from) = legacy(stack_dir) else {
        return Ok(Migration::None);
    };
    let Some(emails) = emails_of(&from) else {
        return Ok(Migration::Left(format!(
            "{} is not a manifest prepare wrote",
            from.join(manifest::ACCOUNTS_JSON).display()
        )));
    };
    let refs: Vec<&str> = emails.iter().map(String::as_str).collect();
    let Some(pattern) = infer_pattern(&refs, hint) else {
        return Ok(Migration::Left(format!(
            "the email pattern of {} cannot be told from its emails",
            from.join(manifest::ACCOUNTS_JSON).display()
        )));
    };
    let to = folder(stack_dir, &pattern);
    if read_meta(&to).is_some() {
        return Ok(Migration::Left(format!(
            "{} already holds a manifest of {}",
            to.display(),
            pattern.text()
        )));
    }
    private_dir(&stack_dir.join(DIR))?;
    private_dir(&to)?;
    let written_ms = std::fs::metadata(from.join(manifest::ACCOUNTS_JSON))
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_millis() as i64);
    let meta = Meta {
        pattern: pattern.text(),
        accounts: emails.len() as u64,
        projects: count_of(&from, manifest::PROJECTS),
        via: None,
        written_ms,
        out: None,
        sweep_room: None,
    };
    let mut files: Vec<&str> = manifest::ALL
        .into_iter()
        .filter(|f| *f != manifest::ACCOUNTS_JSON)
        .collect();
    files.push(manifest::ACCOUNTS_JSON);
    for f in files {
        let p = from.join(f);
        if p.exists() {
            std::fs::rename(&p, to.join(f))
                .with_context(|| format!("moving {} into {}", p.display(), to.display()))?;
        }
    }
    write_meta(&to, &meta)?;
    Ok(Migration::Moved(to))
}

/// Remove a manifest's files (and pattern.json) from `dir`; the folder too when it is then empty.
pub fn remove(dir: &Path) -> Vec<PathBuf> {
    let mut gone = Vec::new();
    for f in manifest::ALL.into_iter().chain([META]) {
        let p = dir.join(f);
        if std::fs::remove_file(&p).is_ok() {
            gone.push(p);
        }
    }
    let _ = std::fs::remove_dir(dir);
    gone
}

/// Write `bytes` to DIR/name with mode 0600 (the one atomic write).
pub fn write_private(dir: &Path, name: &str, bytes: &[u8]) -> Result<PathBuf> {
    let path = dir.join(name);
    crate::shell::atomic::write(&path, bytes, 0o600)?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pat(p: &str) -> EmailPattern {
        EmailPattern::parse(p).unwrap()
    }

    fn entry(dir: &str, pattern: &str, accounts: u64, written_ms: i64) -> Entry {
        Entry {
            dir: PathBuf::from(dir),
            meta: Meta {
                pattern: pattern.into(),
                accounts,
                projects: accounts,
                via: Some("sql".into()),
                written_ms,
                out: None,
                sweep_room: None,
            },
        }
    }

    #[test]
    fn slugs_are_the_pattern_made_safe() {
        assert_eq!(
            slug("bench-user-{i}@exelearning.net"),
            "bench-user-{i}@exelearning.net"
        );
        assert_eq!(slug("a/b{i}@x.org"), "a%2Fb{i}@x.org");
        assert_ne!(slug("a/{i}@x.org"), slug("a%2F{i}@x.org"));
        let long = slug(&format!("{}{{i}}@x.org", "/".repeat(170)));
        assert!(long.len() <= 200 && long.contains('~'), "{long}");
        assert_ne!(
            long,
            slug(&format!("{}{{i}}@y.org", "/".repeat(170))),
            "the hash tells long ones apart"
        );
    }

    #[test]
    fn pattern_read_off_the_emails() {
        let emails: Vec<String> = (0..12).map(|i| format!("u0-{i}@x0.org")).collect();
        let refs: Vec<&str> = emails.iter().map(String::as_str).collect();
        assert_eq!(infer_pattern(&refs, None), Some(pat("u0-{i}@x0.org")));
        // One account, two zeros: only the hint settles it.
        let one = ["u0@x0.org"];
        assert_eq!(infer_pattern(&one, None), None);
        assert_eq!(
            infer_pattern(&one, Some(&pat("u{i}@x0.org"))),
            Some(pat("u{i}@x0.org"))
        );
        assert_eq!(infer_pattern(&one, Some(&pat("v{i}@x.org"))), None);
        assert_eq!(infer_pattern(&["a0@x.org", "a2@x.org"], None), None);
        assert_eq!(infer_pattern(&[], None), None);
    }

    #[test]
    fn rows_a_manifest_still_describes() {
        let p = pat("b-{i}@x.org");
        let rows = [
            "b-0@x.org",
            "b-4@x.org",
            "b-5@x.org",
            "b-04@x.org",
            "b-x1@x.org",
            "a-1@x.org",
        ];
        assert_eq!(still_there(&p, 5, &rows), 2);
        assert_eq!(still_there(&p, 6, &rows), 3);
        assert_eq!(still_there(&p, 5, &[]), 0);
    }

    #[test]
    fn choosing_a_manifest() {
        let a = entry("/s/manifests/a", "a{i}@x.org", 300, 1);
        let b = entry("/s/manifests/b", "b{i}@x.org", 5, 2);
        let both = [b.clone(), a.clone()];
        assert_eq!(choose("s", &both, None, None).unwrap(), b.dir);
        assert_eq!(choose("s", &both, None, Some("a{i}@x.org")).unwrap(), a.dir);
        assert_eq!(
            choose("s", &both, None, Some("a")).unwrap(),
            a.dir,
            "by folder"
        );
        let e = choose("s", &both, None, Some("z{i}@x.org")).unwrap_err();
        assert_eq!(e.field, "--pattern");
        assert!(
            e.problem.contains("--pattern a{i}@x.org (300 accounts)")
                && e.problem.contains("b{i}@x.org"),
            "{e}"
        );
        let legacy = Path::new("/s");
        assert_eq!(choose("s", &[], Some(legacy), None).unwrap(), legacy);
        let e = choose("s", &both, Some(legacy), None).unwrap_err();
        assert_eq!(e.field, "--stack");
        assert!(e.problem.contains("--manifest /s"), "{e}");
        let e = choose("s", &[], None, None).unwrap_err();
        assert!(e.fix.contains("exectl prepare --stack s"), "{e}");
    }

    /// Issue #50 item 2: a sweep of `users_per_project=2,8` after a prepare of 200 accounts left its
    /// room of 8 (16 accounts, the newest) as the stack's default, and `load --users 40` was refused.
    #[test]
    fn a_sweeps_room_sizes_never_become_the_default() {
        let room = |dir, pattern, accounts, written_ms, k| Entry {
            meta: Meta {
                sweep_room: Some(k),
                ..entry(dir, pattern, accounts, written_ms).meta
            },
            ..entry(dir, pattern, accounts, written_ms)
        };
        let prepared = entry("/s/manifests/p", "u{i}@x.org", 200, 1);
        let r2 = room("/s/manifests/r2", "u{i}@r2.x.org", 16, 2, 2);
        let r8 = room("/s/manifests/r8", "u{i}@r8.x.org", 16, 3, 8);
        let all = [r8.clone(), r2.clone(), prepared.clone()];
        assert_eq!(choose("s", &all, None, None).unwrap(), prepared.dir);
        assert_eq!(
            choose("s", &all, None, Some("u{i}@r8.x.org")).unwrap(),
            r8.dir,
            "by name"
        );
        // A room layout the user prepared (`prepare --users-per-project 8`) is theirs: the newest wins.
        let own_rooms = entry("/s/manifests/o", "o{i}@x.org", 40, 4);
        let mine = [own_rooms.clone(), r8.clone(), prepared.clone()];
        assert_eq!(choose("s", &mine, None, None).unwrap(), own_rooms.dir);
        // Only a sweep's rooms: none is taken unnamed; the choices say which is which.
        let e = choose("s", &[r8.clone(), r2], None, None).unwrap_err();
        assert_eq!(e.field, "--stack");
        assert!(
            e.problem.contains(
                "--pattern u{i}@r8.x.org (16 accounts, seeded by a sweep for rooms of 8)"
            ),
            "{e}"
        );
        assert!(e.fix.contains("--pattern P"), "{e}");
        // A legacy manifest is the user's: beside a sweep's rooms only, it is the default.
        let legacy = Path::new("/s");
        assert_eq!(choose("s", &[r8], Some(legacy), None).unwrap(), legacy);
        // A pattern.json written before the mark is the user's.
        let old = r#"{"pattern":"u{i}@x.org","accounts":3,"projects":3,"writtenMs":5}"#;
        let m: Meta = serde_json::from_str(old).unwrap();
        assert_eq!(m.sweep_room, None);
        assert!(!serde_json::to_string(&m).unwrap().contains("sweepRoom"));
    }

    #[test]
    fn legacy_manifest_moves_into_its_folder() {
        let d = tempfile::tempdir().unwrap();
        let s = d.path();
        let accounts = serde_json::json!([
            {"email": "a0@x.org", "password": "pw", "projectUuid": "u", "role": "owner"},
            {"email": "a1@x.org", "password": "pw", "projectUuid": "u", "role": "owner"},
        ]);
        write_private(s, manifest::ACCOUNTS_JSON, accounts.to_string().as_bytes()).unwrap();
        write_private(s, manifest::PROJECTS, b"[{}]").unwrap();
        assert_eq!(
            migrate_legacy(s, None).unwrap(),
            Migration::Moved(folder(s, &pat("a{i}@x.org")))
        );
        let list = list(s);
        assert_eq!(list.len(), 1);
        assert_eq!(list[0].meta.pattern, "a{i}@x.org");
        assert_eq!((list[0].meta.accounts, list[0].meta.projects), (2, 1));
        assert!(legacy(s).is_none());
        assert_eq!(
            std::fs::metadata(&list[0].dir)
                .unwrap()
                .permissions()
                .mode()
                & 0o777,
            0o700
        );
        assert_eq!(migrate_legacy(s, None).unwrap(), Migration::None);
        // Not a manifest: left alone, never deleted.
        std::fs::write(s.join(manifest::ACCOUNTS_JSON), "{").unwrap();
        assert!(matches!(
            migrate_legacy(s, None).unwrap(),
            Migration::Left(_)
        ));
        assert!(s.join(manifest::ACCOUNTS_JSON).exists());
        assert_eq!(
            identify(&list[0].dir, None),
            Some(("a{i}@x.org".to_string(), 2))
        );
        assert_eq!(remove(&list[0].dir).len(), 3);
        assert!(!list[0].dir.exists());
    }
}
