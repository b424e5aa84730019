//! The seeding steps, in order: the accounts (made by the admin), the projects owners who were there
//! before may have made already, each project (reused or made, then its visibility and its saved
//! document), and the collaborators (each added by the project's owner). Each step says, row by row,
//! whether this run made it (`true`) or found it there.

use super::answers::{collaborator, reuse, user_id, with_uuids, ApiProject};
use super::client::{adopt_account, create_project, list_projects, login_id, Api};
use super::{at_once, EMPTY_YJS_UPDATE};
use crate::prepare::plan::Plan;
use crate::prepare::Progress;
use anyhow::{bail, Context, Result};
use exectl_core::error::UsageError;
use reqwest::StatusCode;
use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};

/// The progress bar's count of the requests done, of `total`.
pub(super) struct Bar<'a> {
    done: AtomicU64,
    total: u64,
    progress: Progress<'a>,
}

impl<'a> Bar<'a> {
    /// A bar at 0 of `total`, shown.
    pub fn start(total: u64, progress: Progress<'a>) -> Bar<'a> {
        progress(0, total);
        Bar {
            done: AtomicU64::new(0),
            total,
            progress,
        }
    }

    fn tick(&self) {
        (self.progress)(self.done.fetch_add(1, Ordering::Relaxed) + 1, self.total);
    }
}

/// An account as the run left it: its email, its users.id, and whether this run made it.
pub(super) type Account = (String, i64, bool);

/// Step 1, the accounts: 201 = made; 409 = there already, its id from a login with this run's
/// password; 5xx = looked for (`adopt_account`).
pub(super) async fn accounts(
    api: &Api,
    plan: &Plan,
    admin: &str,
    password: &str,
    bar: &Bar<'_>,
) -> Result<Vec<Account>> {
    at_once(plan.accounts.iter().map(|a| async move {
        let made = api
            .client
            .create_user(&api.door, admin, &a.email, password)
            .answer()
            .await?;
        let r = match made.status {
            StatusCode::CREATED | StatusCode::OK => {
                let id = user_id(&made.body)
                    .with_context(|| format!("creating {}: no id in {}", a.email, made.body))?;
                (a.email.clone(), id, true)
            }
            StatusCode::CONFLICT => match login_id(api, &a.email, password).await? {
                Some(id) => (a.email.clone(), id, false),
                None => bail!(UsageError::new(
                    "--password",
                    "(not shown)",
                    format!("account {} exists with another password", a.email),
                    "pass the password of the earlier run, or choose another --email-pattern",
                )),
            },
            s if s.is_server_error() => (
                a.email.clone(),
                adopt_account(api, &a.email, password, s).await?,
                true,
            ),
            _ => return Err(made.refused(&format!("creating account {}", a.email))),
        };
        bar.tick();
        Ok(r)
    }))
    .await
}

/// Step 2, the projects owners that existed before (`existed`) may have made already, by owner.
pub(super) async fn owned_projects<'p>(
    api: &Api,
    plan: &'p Plan,
    existed: &BTreeSet<String>,
    tokens: &HashMap<&str, String>,
) -> Result<HashMap<&'p str, Vec<ApiProject>>> {
    let owners: BTreeSet<&str> = plan
        .projects
        .iter()
        .map(|p| plan.accounts[p.owner].email.as_str())
        .filter(|e| existed.contains(*e))
        .collect();
    let lists = at_once(owners.into_iter().map(|email| async move {
        let what = format!("listing the projects of {email}");
        Ok((email, list_projects(api, &tokens[email], &what).await?))
    }))
    .await?;
    Ok(lists.into_iter().collect())
}

/// Step 3, each project: reuse (one of `owned` with its title) or create; then visibility, then
/// saved_once. The first to be made goes alone, so that a v1 create's 500 is met once and the others go
/// straight to create-quick. The plan with the app's uuids, and per project whether this run made it.
pub(super) async fn projects(
    api: &Api,
    plan: &Plan,
    ids: &HashMap<String, i64>,
    tokens: &HashMap<&str, String>,
    owned: &HashMap<&str, Vec<ApiProject>>,
    bar: &Bar<'_>,
) -> Result<(Plan, Vec<bool>)> {
    let visibility = plan.visibility.name();
    let found: Vec<Option<ApiProject>> = plan
        .projects
        .iter()
        .map(|p| {
            let email = plan.accounts[p.owner].email.as_str();
            owned
                .get(email)
                .and_then(|l| reuse(l, ids[email], &p.title))
                .cloned()
        })
        .collect();
    let one = |i: usize| {
        let found = &found;
        async move {
            let p = &plan.projects[i];
            let email = plan.accounts[p.owner].email.as_str();
            let token = &tokens[email];
            let (project, made) = match &found[i] {
                Some(f) => (f.clone(), false),
                None => (
                    create_project(api, token, email, ids[email], &p.title).await?,
                    true,
                ),
            };
            bar.tick();
            let set = api
                .client
                .set_visibility(&api.door, token, &project.uuid, visibility)
                .answer()
                .await?;
            if !set.status.is_success() || set.body["responseMessage"] != "OK" {
                return Err(set.refused(&format!("setting project {} {visibility}", project.uuid)));
            }
            bar.tick();
            if !project.saved_once {
                let saved = api
                    .client
                    .save_document(
                        &api.door,
                        token,
                        &project.uuid,
                        EMPTY_YJS_UPDATE.to_vec(),
                        true,
                    )
                    .answer()
                    .await?;
                if !saved.status.is_success() {
                    return Err(saved.refused(&format!("marking project {} saved", project.uuid)));
                }
            }
            bar.tick();
            Ok::<_, anyhow::Error>((i, project.uuid, made))
        }
    };
    let first = found.iter().position(Option::is_none);
    let mut results = Vec::with_capacity(plan.projects.len());
    if let Some(i) = first {
        results.push(one(i).await?);
    }
    results.extend(
        at_once(
            (0..plan.projects.len())
                .filter(|&i| Some(i) != first)
                .map(one),
        )
        .await?,
    );
    let mut uuids = vec![String::new(); plan.projects.len()];
    let mut made = vec![false; plan.projects.len()];
    for (i, uuid, m) in results {
        uuids[i] = uuid;
        made[i] = m;
    }
    Ok((with_uuids(plan, &uuids), made))
}

/// Step 4, the collaborators, each added by the project's owner: per row, added (`true`) or already
/// there.
pub(super) async fn collaborators(
    api: &Api,
    plan: &Plan,
    tokens: &HashMap<&str, String>,
    bar: &Bar<'_>,
) -> Result<Vec<bool>> {
    at_once(plan.collaborator_rows().map(|(p, c)| {
        let owner = plan.accounts[p.owner].email.as_str();
        let email = plan.accounts[c].email.as_str();
        async move {
            let added = api
                .client
                .add_collaborator(&api.door, &tokens[owner], &p.uuid, email)
                .answer()
                .await?;
            if !added.status.is_success() {
                return Err(added.refused(&format!("adding {email} to project {}", p.uuid)));
            }
            let r = collaborator(&added.body).map_err(|m| {
                anyhow::anyhow!("adding {email} to project {} answered {m}", p.uuid)
            })?;
            bar.tick();
            Ok(r)
        }
    }))
    .await
}
