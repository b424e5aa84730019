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
//! Pure: the answers' parsing and the decisions (`user_id`, `project_of`, `quick_project`, `reuse`,
//! `collaborator`, `with_uuids`, `Tally`); the edge: `seed`.

use super::plan::Plan;
use super::{token, Counts, Progress, Stack};
use crate::app::{Client, Endpoint, LoginError, Timeouts};
use anyhow::{bail, Context, Result};
use exectl_core::error::UsageError;
use futures_util::StreamExt;
use reqwest::StatusCode;
use serde::Serialize;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Requests in flight at most.
pub const CONCURRENCY: usize = 16;
/// An empty Yjs update (no structs, an empty delete set): the smallest valid document body.
pub const EMPTY_YJS_UPDATE: [u8; 2] = [0, 0];
/// Each call's bound: account creation hashes a password, and the app may be busy with 16 at once.
const TIMEOUTS: Timeouts = Timeouts::all(Duration::from_secs(60));
/// Lifetime of the owners' offline tokens (only this run uses them).
const OWNER_TOKEN_TTL_S: i64 = 3600;

/// The creating endpoints whose 5xx answers are counted and looked behind.
pub const CREATE_USER: &str = "POST /api/v1/users";
pub const CREATE_PROJECT: &str = "POST /api/v1/projects";
pub const CREATE_QUICK: &str = "POST /api/project/create-quick";

/// Error answers of one kind the app gave during a run, and what became of them.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct AppError {
    /// `METHOD path`, e.g. `POST /api/v1/users`.
    pub endpoint: String,
    pub status: u16,
    /// How many such answers the run saw.
    pub count: u64,
    /// Of those, how many left their row behind, found and adopted.
    pub adopted: u64,
    /// What exectl did about them.
    pub action: String,
}

/// What exectl does after a 5xx of `endpoint`.
fn action(endpoint: &str) -> &'static str {
    match endpoint {
        CREATE_USER => {
            "looked for the account (a login with the run's password): there = adopted, else the run fails"
        }
        CREATE_PROJECT => {
            "looked for the row (the owner's project of the planned title, under a uuid the app chose): there = adopted, else the run fails; later creates went to POST /api/project/create-quick"
        }
        _ => "looked for the row (the owner's project of the planned title): there = adopted, else the run fails",
    }
}

/// The 5xx answers of a run, per endpoint and status (shared by the requests in flight).
#[derive(Debug, Default)]
pub struct Tally(Mutex<BTreeMap<(&'static str, u16), Seen>>);

/// Answers of one endpoint and status: (seen, adopted).
type Seen = (u64, u64);

impl Tally {
    /// One error answer of `endpoint`.
    pub fn seen(&self, endpoint: &'static str, status: StatusCode) {
        self.0
            .lock()
            .unwrap()
            .entry((endpoint, status.as_u16()))
            .or_default()
            .0 += 1;
    }

    /// Its row was found after all and adopted.
    pub fn adopted(&self, endpoint: &'static str, status: StatusCode) {
        self.0
            .lock()
            .unwrap()
            .entry((endpoint, status.as_u16()))
            .or_default()
            .1 += 1;
    }

    pub fn report(&self) -> Vec<AppError> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .map(|(&(endpoint, status), &(count, adopted))| AppError {
                endpoint: endpoint.to_string(),
                status,
                count,
                adopted,
                action: action(endpoint).to_string(),
            })
            .collect()
    }
}

/// A project as `POST|GET /api/v1/projects` describe it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiProject {
    pub uuid: String,
    pub title: String,
    pub owner_id: i64,
    pub saved_once: bool,
}

/// `{success, data:{id, ...}}` of `POST /api/v1/users` (or `{user:{id}}` of a login): the users.id.
pub fn user_id(body: &Value) -> Option<i64> {
    let d = if body.get("data").is_some() {
        &body["data"]
    } else {
        &body["user"]
    };
    match &d["id"] {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// One project object of the v1 API.
pub fn project_of(v: &Value) -> Option<ApiProject> {
    let owner_id = match &v["owner_id"] {
        Value::Number(n) => n.as_i64()?,
        Value::String(s) => s.trim().parse().ok()?,
        _ => return None,
    };
    Some(ApiProject {
        uuid: v["uuid"].as_str()?.to_string(),
        title: v["title"].as_str()?.to_string(),
        owner_id,
        saved_once: matches!(&v["saved_once"], Value::Bool(true))
            || v["saved_once"].as_i64() == Some(1),
    })
}

/// `{success, uuid, projectUuid, projectId, ...}` of `POST /api/project/create-quick`: the project it
/// made (titled and owned as asked; saved_once 0, as every new project).
pub fn quick_project(body: &Value, title: &str, owner_id: i64) -> Option<ApiProject> {
    if body["success"] == Value::Bool(false) {
        return None;
    }
    let uuid = body["projectUuid"].as_str().or(body["uuid"].as_str())?;
    Some(ApiProject {
        uuid: uuid.to_string(),
        title: title.to_string(),
        owner_id,
        saved_once: false,
    })
}

/// The owner's existing project with the planned title (the first, by the list's order), if any.
pub fn reuse<'a>(owned: &'a [ApiProject], owner_id: i64, title: &str) -> Option<&'a ApiProject> {
    owned
        .iter()
        .find(|p| p.owner_id == owner_id && p.title == title)
}

/// What `POST .../collaborators` answered: Ok(true) added, Ok(false) already there, Err otherwise.
pub fn collaborator(answer: &Value) -> Result<bool, String> {
    match answer["responseMessage"].as_str() {
        Some("OK") => Ok(true),
        Some("ALREADY_COLLABORATOR") => Ok(false),
        Some(other) => Err(other.to_string()),
        None => Err(format!("unexpected answer {answer}")),
    }
}

/// The plan with the uuids the app gave its projects (index for index).
pub fn with_uuids(plan: &Plan, uuids: &[String]) -> Plan {
    let mut p = plan.clone();
    for (proj, uuid) in p.projects.iter_mut().zip(uuids) {
        proj.uuid = uuid.clone();
    }
    p
}

/// The app client and the stack's front door, and what the run learnt of the app on the way.
struct Api {
    client: Client,
    door: Endpoint,
    /// The app container, for "read its log" hints.
    container: String,
    errors: Tally,
    /// A v1 project create answered 5xx and left its row: later creates use create-quick.
    v1_broken: AtomicBool,
}

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

/// The account's id from a login with the run's password; None when the app refuses it (401).
async fn login_id(api: &Api, email: &str, password: &str) -> Result<Option<i64>> {
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
async fn adopt_account(api: &Api, email: &str, password: &str, status: StatusCode) -> Result<i64> {
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
async fn create_project(
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
        let listed = api.client.list_projects(&api.door, token).answer().await?;
        if !listed.status.is_success() {
            return Err(listed.refused(&format!(
                "after {endpoint} answered {}, listing the projects of {email}",
                created.status
            )));
        }
        let owned: Vec<ApiProject> = listed.body["data"]
            .as_array()
            .map(|a| a.iter().filter_map(project_of).collect())
            .unwrap_or_default();
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
async fn admin_token(api: &Api, stack: &Stack, password: &str, wait: Duration) -> Result<String> {
    let deadline = Instant::now() + wait;
    loop {
        match super::verify::login(
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

/// Make the plan's rows through the API. `progress` counts requests.
pub async fn seed(
    stack: &Stack,
    plan: &Plan,
    password: &str,
    wait: Duration,
    progress: Progress<'_>,
) -> Result<Outcome> {
    let api = Api {
        client: Client::new(CONCURRENCY, TIMEOUTS),
        door: stack.front_door(),
        container: stack.app_container(),
        errors: Tally::default(),
        v1_broken: AtomicBool::new(false),
    };
    let admin_pw = stack.secret("ADMIN_PASSWORD")?;
    let secret = stack.secret("API_JWT_SECRET")?;
    let t = Instant::now();
    let admin = admin_token(&api, stack, &admin_pw, wait).await?;
    let ready_ms = t.elapsed().as_millis() as u64;

    let n_collab = plan.collaborator_count() as u64;
    let total = plan.accounts.len() as u64 + 3 * plan.projects.len() as u64 + n_collab;
    // (the read-back of step 5 is not counted: the bar shows the writes)
    let done = AtomicU64::new(0);
    let tick = |k: u64| progress(done.fetch_add(k, Ordering::Relaxed) + k, total);
    progress(0, total);

    // 1. Accounts: 201 = made; 409 = there already, its id from a login with this run's password;
    // 5xx = looked for (adopt_account).
    let results: Vec<Result<(String, i64, bool)>> =
        futures_util::stream::iter(plan.accounts.iter().map(|a| {
            let (api, admin, tick) = (&api, &admin, &tick);
            async move {
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
                    s if s.is_server_error() => {
                        (a.email.clone(), adopt_account(api, &a.email, password, s).await?, true)
                    }
                    _ => return Err(made.refused(&format!("creating account {}", a.email))),
                };
                tick(1);
                Ok(r)
            }
        }))
        .buffer_unordered(CONCURRENCY)
        .collect()
        .await;
    let mut ids = HashMap::new();
    let mut existed = BTreeSet::new();
    let mut before = Counts::default();
    let mut added = Counts::default();
    for r in results {
        let (email, id, made) = r?;
        if made {
            added.accounts += 1;
        } else {
            before.accounts += 1;
            existed.insert(email.clone());
        }
        ids.insert(email, id);
    }
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

    // 2. The projects owners that existed before may have made already, by title.
    let owners: BTreeSet<&str> = plan
        .projects
        .iter()
        .map(|p| plan.accounts[p.owner].email.as_str())
        .filter(|e| existed.contains(*e))
        .collect();
    let lists: Vec<Result<(&str, Vec<ApiProject>)>> =
        futures_util::stream::iter(owners.into_iter().map(|email| {
            let (api, tokens) = (&api, &tokens);
            async move {
                let listed = api
                    .client
                    .list_projects(&api.door, &tokens[email])
                    .answer()
                    .await?;
                if !listed.status.is_success() {
                    return Err(listed.refused(&format!("listing the projects of {email}")));
                }
                let list = listed.body["data"]
                    .as_array()
                    .map(|a| a.iter().filter_map(project_of).collect())
                    .unwrap_or_default();
                Ok((email, list))
            }
        }))
        .buffer_unordered(CONCURRENCY)
        .collect()
        .await;
    let mut owned: HashMap<&str, Vec<ApiProject>> = HashMap::new();
    for r in lists {
        let (e, l) = r?;
        owned.insert(e, l);
    }

    // 3. Each project: reuse or create; then visibility, then saved_once. The first to be made goes
    // alone, so that a v1 create's 500 is met once and the others go straight to create-quick.
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
        let (api, tokens, ids, found, tick) = (&api, &tokens, &ids, &found, &tick);
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
            tick(1);
            let set = api
                .client
                .set_visibility(&api.door, token, &project.uuid, visibility)
                .answer()
                .await?;
            if !set.status.is_success() || set.body["responseMessage"] != "OK" {
                return Err(set.refused(&format!("setting project {} {visibility}", project.uuid)));
            }
            tick(1);
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
            tick(1);
            Ok::<_, anyhow::Error>((i, project.uuid, made))
        }
    };
    let first = found.iter().position(Option::is_none);
    let mut results = Vec::with_capacity(plan.projects.len());
    if let Some(i) = first {
        results.push(Ok(one(i).await?));
    }
    results.extend(
        futures_util::stream::iter(
            (0..plan.projects.len())
                .filter(|&i| Some(i) != first)
                .map(one),
        )
        .buffer_unordered(CONCURRENCY)
        .collect::<Vec<_>>()
        .await,
    );
    let mut uuids = vec![String::new(); plan.projects.len()];
    for r in results {
        let (i, uuid, made) = r?;
        if made {
            added.projects += 1;
        } else {
            before.projects += 1;
        }
        uuids[i] = uuid;
    }
    let plan = with_uuids(plan, &uuids);

    // 4. Collaborators, each added by the project's owner.
    let results: Vec<Result<bool>> =
        futures_util::stream::iter(plan.collaborator_rows().map(|(p, c)| {
            let (api, tokens, tick) = (&api, &tokens, &tick);
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
                tick(1);
                Ok(r)
            }
        }))
        .buffer_unordered(CONCURRENCY)
        .collect()
        .await;
    for r in results {
        if r? {
            added.collaborators += 1;
        } else {
            before.collaborators += 1;
        }
    }

    // 5. Read back each project as its owner: there under the manifest's uuid, titled and owned as
    // planned, saved (the SQL path's read-back, through the API).
    let t = Instant::now();
    let checked: Vec<Result<()>> = futures_util::stream::iter(plan.projects.iter().map(|p| {
        let (api, tokens, ids) = (&api, &tokens, &ids);
        let owner = plan.accounts[p.owner].email.as_str();
        async move {
            let got = api
                .client
                .project_metadata(&api.door, &p.uuid, &tokens[owner])
                .answer()
                .await?;
            if !got.status.is_success() {
                return Err(got.refused(&format!("read-back: project {} of {owner}", p.uuid)));
            }
            let found = project_of(&got.body["data"]);
            read_back(found.as_ref(), &p.uuid, &p.title, ids[owner])
                .map_err(|m| anyhow::anyhow!("read-back: project {} of {owner}: {m}", p.uuid))
        }
    }))
    .buffer_unordered(CONCURRENCY)
    .collect()
    .await;
    checked.into_iter().collect::<Result<Vec<()>>>()?;
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

/// A project as read back against the plan: its uuid, title, owner and saved_once; Err names what differs.
pub fn read_back(
    got: Option<&ApiProject>,
    uuid: &str,
    title: &str,
    owner_id: i64,
) -> Result<(), String> {
    let Some(g) = got else {
        return Err("no project in the answer".into());
    };
    let mut wrong = Vec::new();
    if g.uuid != uuid {
        wrong.push(format!("uuid {} (want {uuid})", g.uuid));
    }
    if g.title != title {
        wrong.push(format!("title {:?} (want {title:?})", g.title));
    }
    if g.owner_id != owner_id {
        wrong.push(format!("owner {} (want {owner_id})", g.owner_id));
    }
    if !g.saved_once {
        wrong.push("saved_once 0 (want 1)".into());
    }
    if wrong.is_empty() {
        Ok(())
    } else {
        Err(wrong.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prepare::plan::{plan, shape, EmailPattern, Visibility};
    use serde_json::json;

    #[test]
    fn answers() {
        assert_eq!(
            user_id(&json!({"success": true, "data": {"id": 7}})),
            Some(7)
        );
        assert_eq!(
            user_id(&json!({"access_token": "x", "user": {"id": "8"}})),
            Some(8)
        );
        assert_eq!(user_id(&json!({"success": true})), None);
        let p = project_of(
            &json!({"id": 1, "uuid": "u", "title": "t", "owner_id": 3, "saved_once": false}),
        )
        .unwrap();
        assert_eq!(
            p,
            ApiProject {
                uuid: "u".into(),
                title: "t".into(),
                owner_id: 3,
                saved_once: false
            }
        );
        assert!(
            project_of(&json!({"uuid": "u", "title": "t", "owner_id": 3, "saved_once": 1}))
                .unwrap()
                .saved_once
        );
        assert!(project_of(&json!({"title": "t", "owner_id": 3})).is_none());
        assert_eq!(collaborator(&json!({"responseMessage": "OK"})), Ok(true));
        assert_eq!(
            collaborator(&json!({"responseMessage": "ALREADY_COLLABORATOR"})),
            Ok(false)
        );
        assert_eq!(
            collaborator(&json!({"responseMessage": "USER_NOT_FOUND"})),
            Err("USER_NOT_FOUND".into())
        );
        assert!(collaborator(&json!({})).is_err());
    }

    #[test]
    fn read_back_names_what_differs() {
        let p = ApiProject {
            uuid: "u".into(),
            title: "bench-project-0".into(),
            owner_id: 3,
            saved_once: true,
        };
        assert_eq!(read_back(Some(&p), "u", "bench-project-0", 3), Ok(()));
        assert_eq!(
            read_back(Some(&p), "u", "bench-project-0", 4),
            Err("owner 3 (want 4)".into())
        );
        let unsaved = ApiProject {
            saved_once: false,
            title: "x".into(),
            ..p.clone()
        };
        let e = read_back(Some(&unsaved), "u", "bench-project-0", 3).unwrap_err();
        assert!(
            e.contains("title \"x\"") && e.contains("saved_once 0"),
            "{e}"
        );
        assert!(read_back(None, "u", "t", 3).is_err());
    }

    #[test]
    fn create_quick_answer() {
        let body = json!({"success": true, "uuid": "u1", "projectUuid": "u1", "projectId": 9,
            "sessionId": "s"});
        assert_eq!(
            quick_project(&body, "bench-project-3", 4),
            Some(ApiProject {
                uuid: "u1".into(),
                title: "bench-project-3".into(),
                owner_id: 4,
                saved_once: false
            })
        );
        assert_eq!(
            quick_project(&json!({"uuid": "u2"}), "t", 1).unwrap().uuid,
            "u2"
        );
        assert!(quick_project(&json!({"success": false, "uuid": "u"}), "t", 1).is_none());
        assert!(quick_project(&json!({"success": true}), "t", 1).is_none());
    }

    #[test]
    fn app_errors_are_counted_per_endpoint_and_status() {
        let t = Tally::default();
        assert!(t.report().is_empty());
        let e500 = StatusCode::INTERNAL_SERVER_ERROR;
        for _ in 0..3 {
            t.seen(CREATE_USER, e500);
            t.adopted(CREATE_USER, e500);
        }
        t.seen(CREATE_USER, StatusCode::BAD_GATEWAY);
        t.seen(CREATE_PROJECT, e500);
        t.adopted(CREATE_PROJECT, e500);
        let r = t.report();
        let rows: Vec<_> = r
            .iter()
            .map(|e| (e.endpoint.as_str(), e.status, e.count, e.adopted))
            .collect();
        assert_eq!(
            rows,
            [
                (CREATE_PROJECT, 500, 1, 1),
                (CREATE_USER, 500, 3, 3),
                (CREATE_USER, 502, 1, 0)
            ]
        );
        assert!(r[0].action.contains("create-quick"), "{}", r[0].action);
        let j = serde_json::to_value(&r[1]).unwrap();
        assert_eq!(j["endpoint"], "POST /api/v1/users");
        assert_eq!(j["count"], 3);
    }

    #[test]
    fn reuse_by_owner_and_title() {
        let p = |uuid: &str, title: &str, owner_id| ApiProject {
            uuid: uuid.into(),
            title: title.into(),
            owner_id,
            saved_once: true,
        };
        let owned = vec![
            p("a", "bench-project-1", 5),
            p("b", "bench-project-0", 6),
            p("c", "bench-project-0", 5),
        ];
        assert_eq!(
            reuse(&owned, 5, "bench-project-0").unwrap().uuid,
            "c",
            "a shared project is not the owner's"
        );
        assert!(reuse(&owned, 5, "bench-project-2").is_none());
    }

    #[test]
    fn the_apps_uuids_in_the_plan() {
        let p = plan(
            shape(4, Some(2), Some(2)).unwrap(),
            &EmailPattern::parse("u{i}@x.org").unwrap(),
            Visibility::Private,
        );
        let q = with_uuids(&p, &["x".into(), "y".into()]);
        assert_eq!(
            q.projects
                .iter()
                .map(|p| p.uuid.as_str())
                .collect::<Vec<_>>(),
            ["x", "y"]
        );
        assert_eq!(q.accounts, p.accounts);
        assert_eq!(q.projects[1].owner, p.projects[1].owner);
    }
}
