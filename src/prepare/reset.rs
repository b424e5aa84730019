//! `prepare --reset`: remove one pattern's rows and its manifest, keeping any manifest that still
//! describes rows in the database.

use super::*;
use crate::state::manifests as store;

#[derive(Debug, Clone, Serialize)]
pub struct ResetSummary {
    pub stack: String,
    pub accounts: u64,
    pub projects: u64,
    /// Yjs document rows of those projects.
    pub documents: u64,
    /// Manifest files removed.
    pub files: Vec<PathBuf>,
    /// Manifests left in place, and why.
    pub kept: Vec<Kept>,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Kept {
    pub dir: PathBuf,
    pub reason: String,
}

/// Remove what prepare made for this pattern, then this pattern's manifest: its folder in the stack's
/// folder and, with `out`, the one there. A manifest of another pattern, or one that still describes
/// rows in the database (accounts the SQL path did not make, e.g. `--via api`), is kept.
pub async fn reset(
    target: &Target,
    stack: &Stack,
    pattern: &plan::EmailPattern,
    stack_dir: &Path,
    out: Option<&Path>,
    schema_timeout: Duration,
) -> Result<ResetSummary> {
    let db = stack.open_db(target).await?;
    let script = format!(
        "{}{}",
        sql::reset(stack.db, pattern),
        sql::remaining(stack.db, pattern)
    );
    let result = match db.wait_schema(schema_timeout, &script).await {
        Ok(out) => Ok(out),
        Err(db::SchemaWait::Missing(m)) => Err(schema_error(stack, m)),
        Err(db::SchemaWait::Failed(e)) => Err(e),
    };
    db.close().await;
    let text = result?;
    let r = sql::rows(&text, "R").next().unwrap_or_default();
    let n = |i: usize| r.get(i).and_then(|v| v.trim().parse().ok()).unwrap_or(0);
    let remaining: Vec<&str> = sql::rows(&text, "L")
        .filter_map(|r| r.first().copied())
        .collect();
    let mut files = Vec::new();
    let mut kept = Vec::new();
    let home = store::folder(stack_dir, pattern);
    for dir in std::iter::once(home.as_path()).chain(out) {
        match store::identify(dir, Some(pattern)) {
            // No manifest (or a write cut short): what is left of this pattern's own folder goes.
            None if dir == home => files.extend(store::remove(dir)),
            None => {}
            Some((p, _)) if p != pattern.text() => kept.push(Kept {
                dir: dir.to_path_buf(),
                reason: format!("it is the manifest of another pattern, {p}"),
            }),
            Some((_, accounts)) => match store::still_there(pattern, accounts, &remaining) {
                0 => files.extend(store::remove(dir)),
                left => kept.push(Kept {
                    dir: dir.to_path_buf(),
                    reason: format!(
                        "{left} of its {accounts} accounts are still in the database (not made by the SQL path, e.g. --via api)"
                    ),
                }),
            },
        }
    }
    Ok(ResetSummary {
        stack: stack.name.clone(),
        accounts: n(0),
        projects: n(1),
        documents: n(2),
        files,
        kept,
    })
}
