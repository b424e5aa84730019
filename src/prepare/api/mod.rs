//! `prepare --via api`: the same accounts, projects, collaborators and manifest as the SQL path, made
//! through the app's HTTP API at the stack's front door, for images where SQL seeding is not wanted.
//!
//! The admin (ADMIN_EMAIL / ADMIN_PASSWORD of the stack) creates the accounts (`POST /api/v1/users`);
//! each owner then acts with a token minted offline (`token::mint`, the users.id from the create answer),
//! so no per-owner bcrypt login is paid: `POST /api/v1/projects`, `PATCH .../visibility`, `POST
//! .../yjs-document?markSaved=true` (saved_once = 1, as the SQL path writes), `POST .../collaborators`.
//!
//! Idempotent through what the app answers: 409 on a user = already there (its id from a login with the
//! run's password, which also proves the password is the same); an existing owner's projects are listed
//! (`GET /api/v1/projects`) and one with the planned title is reused, never created twice;
//! `ALREADY_COLLABORATOR` = already there. The app picks the project uuids: the manifest names those.
//!
//! Over the app's known 500s (contract §8), in one run: a 5xx on `POST /api/v1/users` is followed by a
//! login with the run's password: the account is there (the real build answers 500 after its insert)
//! and is adopted, or it is not and the run fails. A 5xx on a project create is followed by a look-up of
//! the owner's projects by title: the row the 500 left (under a uuid the app chose, without its Yjs
//! document) is adopted, or there is none and the run fails. Adopting it, rather than deleting it and
//! making another, leaves one project per planned title, so a re-run's reuse-by-title finds exactly that
//! one; its missing document is written by the `markSaved` save every project gets anyway. After such a
//! 500 the remaining projects are made with `POST /api/project/create-quick`, which works on those
//! builds, so the bug costs one failed request per run rather than one per project: the first project to
//! be made goes alone, the rest follow. Every 5xx is counted per endpoint and reported (`AppError`).
//!
//! Here the run, step by step (`seed`); `client` is the request client and the calls that look behind an
//! answer, `steps` the seeding steps, `read_back` the read-back; pure: `answers` (the answers' parsing
//! and the decisions: `user_id`, `project_of`, `quick_project`, `reuse`, `collaborator`, `with_uuids`)
//! and `app_errors` (the 5xx `Tally`).

pub mod answers;
pub mod app_errors;
mod client;
pub mod read_back;
mod steps;

use super::plan::Plan;
use super::{token, Counts, Progress, Stack};
use crate::app::Timeouts;
use anyhow::Result;
use app_errors::AppError;
use client::{admin_token, Api};
use futures_util::StreamExt;
use std::collections::{BTreeSet, HashMap};
use std::future::Future;
use std::time::{Duration, Instant};
use steps::Bar;

/// Requests in flight at most.
pub const CONCURRENCY: usize = 16;
/// An empty Yjs update (no structs, an empty delete set): the smallest valid document body.
pub const EMPTY_YJS_UPDATE: [u8; 2] = [0, 0];
/// Each call's bound: account creation hashes a password, and the app may be busy with 16 at once.
const TIMEOUTS: Timeouts = Timeouts::all(Duration::from_secs(60));
/// Lifetime of the owners' offline tokens (only this run uses them).
const OWNER_TOKEN_TTL_S: i64 = 3600;

/// What the API phase made and found.
pub struct Outcome {
    pub plan: Plan,
    pub ids: HashMap<String, i64>,
    pub before: Counts,
    pub added: Counts,
    pub ready_ms: u64,
    pub readback_ms: u64,
    /// The app's 5xx answers seen on the way (the run converged over them).
    pub app_errors: Vec<AppError>,
}

/// Make the plan's rows through the API. `progress` counts requests.
pub async fn seed(
    stack: &Stack,
    plan: &Plan,
    password: &str,
    wait: Duration,
    progress: Progress<'_>,
) -> Result<Outcome> {
    let api = Api::new(stack);
    let admin_pw = stack.secret("ADMIN_PASSWORD")?;
    let secret = stack.secret("API_JWT_SECRET")?;
    let t = Instant::now();
    let admin = admin_token(&api, stack, &admin_pw, wait).await?;
    let ready_ms = t.elapsed().as_millis() as u64;

    // (the read-back is not counted: the bar shows the writes)
    let total = plan.accounts.len() as u64
        + 3 * plan.projects.len() as u64
        + plan.collaborator_count() as u64;
    let bar = Bar::start(total, progress);

    let accounts = steps::accounts(&api, plan, &admin, password, &bar).await?;
    let existed: BTreeSet<String> = accounts
        .iter()
        .filter(|(_, _, made)| !made)
        .map(|(email, _, _)| email.clone())
        .collect();
    let accounts_made: Vec<bool> = accounts.iter().map(|(_, _, made)| *made).collect();
    let ids: HashMap<String, i64> = accounts
        .into_iter()
        .map(|(email, id, _)| (email, id))
        .collect();
    let iat = super::now_ms() / 1000;
    let tokens: HashMap<&str, String> = plan
        .accounts
        .iter()
        .map(|a| {
            let t = token::mint(
                secret.as_bytes(),
                ids[&a.email],
                &a.email,
                iat,
                OWNER_TOKEN_TTL_S,
            );
            (a.email.as_str(), t)
        })
        .collect();

    let owned = steps::owned_projects(&api, plan, &existed, &tokens).await?;
    let (plan, projects_made) = steps::projects(&api, plan, &ids, &tokens, &owned, &bar).await?;
    let collaborators_made = steps::collaborators(&api, &plan, &tokens, &bar).await?;

    let t = Instant::now();
    read_back::read_back_all(&api, &plan, &ids, &tokens).await?;
    let (before, added) = counts(&accounts_made, &projects_made, &collaborators_made);
    Ok(Outcome {
        plan,
        ids,
        before,
        added,
        ready_ms,
        readback_ms: t.elapsed().as_millis() as u64,
        app_errors: api.errors.report(),
    })
}

/// Run `calls`, `CONCURRENCY` at a time, all to their end: their values in the order they finished, or
/// the first error.
async fn at_once<T>(
    calls: impl Iterator<Item = impl Future<Output = Result<T>>>,
) -> Result<Vec<T>> {
    futures_util::stream::iter(calls)
        .buffer_unordered(CONCURRENCY)
        .collect::<Vec<_>>()
        .await
        .into_iter()
        .collect()
}

/// (there before, added by this run) from each row's "made by this run".
fn counts(accounts: &[bool], projects: &[bool], collaborators: &[bool]) -> (Counts, Counts) {
    let made = |rows: &[bool]| rows.iter().filter(|m| **m).count() as u64;
    let there = |rows: &[bool]| rows.len() as u64 - made(rows);
    (
        Counts {
            accounts: there(accounts),
            projects: there(projects),
            collaborators: there(collaborators),
            ..Counts::default()
        },
        Counts {
            accounts: made(accounts),
            projects: made(projects),
            collaborators: made(collaborators),
            ..Counts::default()
        },
    )
}
