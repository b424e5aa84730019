//! The request client of `--via api`: the app client at the stack's front door, and the calls that look
//! behind an answer (a login for an account's id, a 5xx's row adopted, the admin's login while the app
//! boots).

use super::answers::{project_of, quick_project, reuse, ApiProject};
use super::app_errors::{Tally, CREATE_PROJECT, CREATE_QUICK, CREATE_USER};
use super::{CONCURRENCY, TIMEOUTS};
use crate::app::{Client, Endpoint, LoginError};
use crate::prepare::Stack;
use anyhow::{bail, Context, Result};
use reqwest::StatusCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The app client and the stack's front door, and what the run learnt of the app on the way.
pub(super) struct Api {
    pub client: Client,
    pub door: Endpoint,
    /// The app container, for "read its log" hints.
    pub container: String,
    pub errors: Tally,
    /// A v1 project create answered 5xx and left its row: later creates use create-quick.
    v1_broken: AtomicBool,
}

impl Api {
    pub fn new(stack: &Stack) -> Api {
        Api {
            client: Client::new(CONCURRENCY, TIMEOUTS),
            door: stack.front_door(),
            container: stack.app_container(),
            errors: Tally::default(),
            v1_broken: AtomicBool::new(false),
        }
    }
}

/// The projects the account of `token` can see (`GET /api/v1/projects`); `what` names the listing in
/// an error.
pub(super) async fn list_projects(api: &Api, token: &str, what: &str) -> Result<Vec<ApiProject>> {
    let listed = api.client.list_projects(&api.door, token).answer().await?;
    if !listed.status.is_success() {
        return Err(listed.refused(what));
    }
    Ok(listed.body["data"]
        .as_array()
        .map(|a| a.iter().filter_map(project_of).collect())
        .unwrap_or_default())
}

/// The account's id from a login with the run's password; None when the app refuses it (401).
pub(super) async fn login_id(api: &Api, email: &str, password: &str) -> Result<Option<i64>> {
    match api.client.login(&api.door, email, password).await {
        Ok(l) => {
            Ok(Some(l.user_id.with_context(|| {
                format!("login of {email}: no user id")
            })?))
        }
        Err(LoginError::Refused {
            status: StatusCode::UNAUTHORIZED,
            ..
        }) => Ok(None),
        Err(e) => Err(anyhow::Error::new(e).context(format!("login of {email}"))),
    }
}

/// After a 5xx of `POST /api/v1/users`: the account's id when it was made after all (it logs in with
/// the run's password); else the run fails.
pub(super) async fn adopt_account(
    api: &Api,
    email: &str,
    password: &str,
    status: StatusCode,
) -> Result<i64> {
    api.errors.seen(CREATE_USER, status);
    match login_id(api, email, password).await? {
        Some(id) => {
            api.errors.adopted(CREATE_USER, status);
            Ok(id)
        }
        None => bail!(
            "{CREATE_USER} answered {status} for {email}, and no account {email} logs in with the run's password: it was not created (not adopted); read the app's log: docker logs {}",
            api.container
        ),
    }
}

/// Make one project as its owner: `POST /api/v1/projects`, or create-quick once v1 is known broken.
/// After a 5xx, the row it left (the owner's project of this title) is adopted; none = the run fails.
pub(super) async fn create_project(
    api: &Api,
    token: &str,
    email: &str,
    owner_id: i64,
    title: &str,
) -> Result<ApiProject> {
    let quick = api.v1_broken.load(Ordering::Relaxed);
    let (endpoint, call) = if quick {
        (
            CREATE_QUICK,
            api.client.create_quick(&api.door, token, title),
        )
    } else {
        (
            CREATE_PROJECT,
            api.client.create_project(&api.door, token, title),
        )
    };
    let created = call.answer().await?;
    if created.status.is_server_error() {
        api.errors.seen(endpoint, created.status);
        let owned = list_projects(
            api,
            token,
            &format!(
                "after {endpoint} answered {}, listing the projects of {email}",
                created.status
            ),
        )
        .await?;
        let Some(found) = reuse(&owned, owner_id, title).cloned() else {
            bail!(
                "{endpoint} answered {} for project {title:?} of {email}, and {email} owns no project of that title: it was not created (not adopted); read the app's log: docker logs {}",
                created.status,
                api.container
            )
        };
        api.errors.adopted(endpoint, created.status);
        if !quick {
            api.v1_broken.store(true, Ordering::Relaxed);
        }
        return Ok(found);
    }
    if !created.status.is_success() {
        return Err(created.refused(&format!("{endpoint} {title:?} as {email}")));
    }
    let made = if quick {
        quick_project(&created.body, title, owner_id)
    } else {
        project_of(&created.body["data"])
    };
    made.with_context(|| format!("{endpoint} {title:?}: unexpected answer {}", created.body))
}

/// Log in as the stack's admin, retrying while the app boots (up to `wait`).
pub(super) async fn admin_token(
    api: &Api,
    stack: &Stack,
    password: &str,
    wait: Duration,
) -> Result<String> {
    let deadline = Instant::now() + wait;
    loop {
        match crate::prepare::verify::login(
            &api.client,
            &api.door,
            exectl_core::render::ADMIN_EMAIL,
            password,
        )
        .await
        {
            Ok(t) => return Ok(t),
            Err(_) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            Err(e) => {
                return Err(e.context(format!(
                "the stack's admin ({}) cannot log in through {} (is the app up? docker logs {})",
                exectl_core::render::ADMIN_EMAIL,
                api.door.addr,
                stack.app_container()
            )))
            }
        }
    }
}
