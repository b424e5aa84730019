//! Running the seed in the database: the schema probe and the state of the pattern's rows, the writes in
//! batches, and the read-back that proves them (`check_rows`).

use super::*;
use futures_util::StreamExt;

pub(super) type Seeded = (Counts, Counts, HashMap<String, i64>);

pub(super) async fn seed(
    stack: &Stack,
    opts: &Options,
    db: &db::Database,
    hashing: tokio::task::JoinHandle<Result<(String, Duration)>>,
    timings: &mut Timings,
    progress: Progress<'_>,
    written: tokio::sync::oneshot::Sender<()>,
) -> Result<Seeded> {
    let plan = &opts.plan;
    let pattern = &plan.pattern;
    let t = Instant::now();
    // Once the schema is there, in the same exec: what exists, and whether it agrees with this run.
    let state = match db
        .wait_schema(
            opts.schema_timeout,
            &format!(
                "{}{}",
                sql::state(stack.db, pattern),
                sql::readback(stack.db, pattern)
            ),
        )
        .await
    {
        Ok(out) => out,
        Err(db::SchemaWait::Missing(m)) => return Err(schema_error(stack, m)),
        Err(db::SchemaWait::Failed(e)) => return Err(e),
    };
    timings.schema = ms(t.elapsed());
    let before = counts(&state);
    let existing_hash = sql::rows(&state, "H").next().map(|r| r.join("\t"));
    let wanted: HashSet<&str> = plan.accounts.iter().map(|a| a.email.as_str()).collect();
    if let Some(r) =
        sql::rows(&state, "U").find(|r| r.get(2) == Some(&"0") && wanted.contains(r[1]))
    {
        bail!(UsageError::new(
            "--email-pattern",
            format!("{}{{i}}{}", plan.pattern.prefix, plan.pattern.suffix),
            format!("account {} exists and was not made by prepare", r[1]),
            "choose another --email-pattern (prepare never changes accounts it did not make)",
        ));
    }
    let (hash, took) = hashing.await.context("hashing thread")??;
    timings.hash = ms(took);
    if let Some(old) = existing_hash {
        let pw = opts.password.clone();
        let same = tokio::task::spawn_blocking(move || bcrypt::verify(pw, &old).unwrap_or(false))
            .await
            .context("hashing thread")?;
        if !same {
            bail!(UsageError::new(
                "--password",
                "(not shown)",
                "accounts prepare made earlier with this --email-pattern have another password",
                "pass the password of the earlier run, or remove them first with --reset",
            ));
        }
    }

    // Writes: one transaction per chunk, several chunks per exec; each kind's execs at once over
    // `lanes` connections, and the next kind (which joins the rows of the one before) after them.
    let t = Instant::now();
    // Nothing of the pattern there yet (the usual first run): PostgreSQL takes the one-statement path.
    let fresh = sql::rows(&state, "U").next().is_none().then(|| sql::Fresh {
        superuser: sql::rows(&state, "S").any(|r| r.first() == Some(&"1")),
    });
    let chunks = sql::write_chunks(stack.db, plan, &hash, now_ms(), opts.batch, fresh);
    let total: u64 = chunks.iter().map(|c| c.rows as u64).sum();
    let lanes = write_lanes(stack.db);
    let spans = row_spans(&chunks);
    let mut done = 0;
    progress(0, total);
    for wave in waves(&chunks, ROWS_PER_EXEC, lanes) {
        let mut runs = futures_util::stream::iter(wave.into_iter().map(|r| {
            let script: String = chunks[r.clone()].iter().map(|c| c.sql.as_str()).collect();
            async move { (r, db.run(&script).await) }
        }))
        .buffer_unordered(lanes);
        while let Some((r, ran)) = runs.next().await {
            if let Err(e) = ran {
                let line = e
                    .downcast_ref::<super::client_error::ClientFailed>()
                    .and_then(|c| c.line);
                let at = failing(&chunks[r.clone()], r.start, line);
                let cut = crate::sut::transport_failure(&e);
                let writing = format!("writing {}", rows_of(&at, &spans));
                return Err(match db.lost(cut).await {
                    // The engine answered that the database stopped: the stream cut with it is the
                    // database lost (exit 1), not the link to the engine (exit 3).
                    Some(lost) if cut => anyhow::anyhow!("{writing} ({lost}): {e:#}"),
                    Some(lost) => e.context(format!("{writing} ({lost})")),
                    None => e.context(writing),
                });
            }
            done += chunks[r].iter().map(|c| c.rows as u64).sum::<u64>();
            progress(done, total);
        }
    }
    // Every row is committed: the verification through the front door may begin beside the read-back.
    let _ = written.send(());
    // The read-back in two parts over the write lanes (one script where there is one lane).
    let parts: Vec<String> = match lanes {
        1 => vec![sql::readback(stack.db, pattern)],
        _ => sql::readback_parts(stack.db, pattern).into(),
    };
    let out = futures_util::future::try_join_all(parts.iter().map(|q| db.run(q)))
        .await
        .context("reading back what was written")?
        .concat();
    timings.write = ms(t.elapsed());

    // Check every planned row against the read-back.
    let t = Instant::now();
    let ids = check_rows(plan, &out)?;
    let after = counts(&out);
    timings.readback = ms(t.elapsed());
    Ok((before, after, ids))
}

/// Rows streamed in one exec at most: large runs still show progress, the usual ones take one round trip.
/// An exec costs about 100 ms to start here (docker exec, psql, its connection): 100,000 accounts with
/// their projects and documents are two of them, one per lane.
const ROWS_PER_EXEC: usize = 50_000;

/// Connections that write at once. PostgreSQL: two (this machine's cores), since at 100,000 rows the
/// time is the database's own per-row work (index entries, foreign-key checks) on one backend each, and
/// the rows of one kind are independent. MariaDB and SQLite: one — InnoDB's gap locks between two
/// `INSERT … SELECT` of the same table can deadlock, and SQLite has one writer anyway.
fn write_lanes(db: exectl_core::spec::Db) -> usize {
    match db {
        exectl_core::spec::Db::Postgres => 2,
        _ => 1,
    }
}

/// The execs of a write, in waves: each wave is one kind's chunks (accounts, projects,
/// collaborators) as ranges of at most `max_rows` rows, cut so that `lanes` connections share the kind
/// (a kind of 10,000 rows over two lanes: two execs of 5,000). A range holds whole chunks.
pub(super) fn waves(
    chunks: &[sql::Chunk],
    max_rows: usize,
    lanes: usize,
) -> Vec<Vec<std::ops::Range<usize>>> {
    let mut out: Vec<Vec<std::ops::Range<usize>>> = Vec::new();
    let mut start = 0;
    while start < chunks.len() {
        let what = chunks[start].what;
        let end = chunks[start..]
            .iter()
            .position(|c| c.what != what)
            .map_or(chunks.len(), |n| start + n);
        let rows: usize = chunks[start..end].iter().map(|c| c.rows).sum();
        let cap = max_rows.min(rows.div_ceil(lanes.max(1))).max(1);
        let mut wave = Vec::new();
        let (mut from, mut held) = (start, 0);
        for (i, c) in chunks.iter().enumerate().take(end).skip(start) {
            if i > from && held + c.rows > cap {
                wave.push(from..i);
                (from, held) = (i, 0);
            }
            held += c.rows;
        }
        wave.push(from..end);
        out.push(wave);
        start = end;
    }
    out
}

/// Each chunk's rows within its kind (accounts, projects, collaborators): first and last, from 1, and
/// the kind's total.
pub(super) fn row_spans(chunks: &[sql::Chunk]) -> Vec<(&sql::Chunk, usize, usize, usize)> {
    let total = |what: &str| -> usize {
        chunks
            .iter()
            .filter(|c| c.what == what)
            .map(|c| c.rows)
            .sum()
    };
    let mut seen: HashMap<&str, usize> = HashMap::new();
    chunks
        .iter()
        .map(|c| {
            let before = seen.entry(c.what).or_default();
            let span = (c, *before + 1, *before + c.rows, total(c.what));
            *before += c.rows;
            span
        })
        .collect()
}

/// The chunks (by index) a failed exec of group `g`, whose first chunk is `first`, points to: the one
/// holding the script line the client named, else the whole group.
pub(super) fn failing(g: &[sql::Chunk], first: usize, line: Option<usize>) -> Vec<usize> {
    let mut end = 0;
    for (i, c) in g.iter().enumerate() {
        let start = end;
        end += c.sql.matches('\n').count();
        if line.is_some_and(|l| l > start && l <= end) {
            return vec![first + i];
        }
    }
    (first..first + g.len()).collect()
}

/// Those chunks' rows, by kind, with their statements: `accounts 5001–10000 of 20000 (INSERT INTO
/// users)`. Never a value.
pub(super) fn rows_of(at: &[usize], spans: &[(&sql::Chunk, usize, usize, usize)]) -> String {
    let mut parts: Vec<(&str, &str, usize, usize, usize)> = Vec::new();
    for &(c, from, to, total) in at.iter().filter_map(|&i| spans.get(i)) {
        match parts.last_mut() {
            Some(p) if p.0 == c.what => p.3 = to,
            _ => parts.push((c.what, c.statement, from, to, total)),
        }
    }
    parts
        .iter()
        .map(|(what, statement, from, to, total)| {
            format!("{what} {from}–{to} of {total} ({statement})")
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// What prepare made for the pattern, from the read-back's rows: its marked accounts, their projects,
/// those projects' documents and the collaborator rows (the state before the writes is the same
/// read-back, run first).
fn counts(readback: &str) -> Counts {
    Counts {
        accounts: sql::rows(readback, "U")
            .filter(|r| r.get(2) == Some(&"1"))
            .count() as u64,
        projects: sql::rows(readback, "P").count() as u64,
        collaborators: sql::rows(readback, "C").count() as u64,
        documents: Some(
            sql::rows(readback, "P")
                .filter(|r| r.get(3) == Some(&"1"))
                .count() as u64,
        ),
    }
}

/// Every planned account, project (with its owner and its Yjs document) and collaborator row is in the
/// database: the map email → users.id. Pure, on the read-back text.
pub fn check_rows(plan: &Plan, out: &str) -> Result<HashMap<String, i64>> {
    let num = |v: &str| -> Result<i64> {
        v.trim()
            .parse()
            .with_context(|| format!("unexpected id {v:?} in the read-back"))
    };
    let mut ids = HashMap::new();
    for r in sql::rows(out, "U") {
        if r.len() >= 3 && r[2] == "1" {
            ids.insert(r[1].to_string(), num(r[0])?);
        }
    }
    let mut projects = HashMap::new();
    let mut documents = HashSet::new();
    for r in sql::rows(out, "P") {
        if r.len() >= 3 {
            projects.insert(r[1].to_string(), (num(r[0])?, num(r[2])?));
            if r.get(3).map(|v| v.trim()) == Some("1") {
                documents.insert(num(r[0])?);
            }
        }
    }
    let mut collab = HashSet::new();
    for r in sql::rows(out, "C") {
        if r.len() >= 2 {
            collab.insert((num(r[0])?, num(r[1])?));
        }
    }
    let missing_accounts = plan
        .accounts
        .iter()
        .filter(|a| !ids.contains_key(&a.email))
        .count();
    if missing_accounts > 0 {
        bail!(
            "row check: {missing_accounts} of {} accounts are missing after the writes",
            plan.accounts.len()
        );
    }
    let mut bad_projects = 0;
    for p in &plan.projects {
        match projects.get(&p.uuid) {
            Some((_, owner)) if *owner == ids[&plan.accounts[p.owner].email] => {}
            _ => bad_projects += 1,
        }
    }
    if bad_projects > 0 {
        bail!(
            "row check: {bad_projects} of {} projects are missing or have another owner",
            plan.projects.len()
        );
    }
    let missing_docs = plan
        .projects
        .iter()
        .filter(|p| !documents.contains(&projects[&p.uuid].0))
        .count();
    if missing_docs > 0 {
        bail!(
            "row check: {missing_docs} of {} projects have no Yjs document",
            plan.projects.len()
        );
    }
    let missing_collab = plan
        .collaborator_rows()
        .filter(|(p, c)| !collab.contains(&(projects[&p.uuid].0, ids[&plan.accounts[*c].email])))
        .count();
    if missing_collab > 0 {
        bail!(
            "row check: {missing_collab} of {} collaborator rows are missing",
            plan.collaborator_count()
        );
    }
    Ok(ids)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_write_names_its_statement_and_rows() {
        let c = |what, statement, rows, lines: usize| sql::Chunk {
            what,
            statement,
            rows,
            sql: "x\n".repeat(lines),
        };
        let chunks = vec![
            c("accounts", "INSERT INTO users", 5000, 10),
            c("accounts", "INSERT INTO users", 5000, 10),
            c("accounts", "INSERT INTO users", 100, 10),
            c(
                "projects",
                "INSERT INTO projects and yjs_documents",
                2000,
                10,
            ),
        ];
        let spans = row_spans(&chunks);
        let g = &chunks[1..];
        // Line 15 of the exec's script is in its second chunk (lines 11..=20).
        assert_eq!(failing(g, 1, Some(15)), vec![2]);
        assert_eq!(
            rows_of(&failing(g, 1, Some(15)), &spans),
            "accounts 10001–10100 of 10100 (INSERT INTO users)"
        );
        // No line (a broken pipe, a lost connection without one): the whole exec.
        assert_eq!(
            rows_of(&failing(g, 1, None), &spans),
            "accounts 5001–10100 of 10100 (INSERT INTO users), projects 1–2000 of 2000 (INSERT INTO projects and yjs_documents)"
        );
        assert_eq!(
            failing(g, 1, Some(99)),
            vec![1, 2, 3],
            "beyond the chunks: the readback"
        );
    }
}
