//! Configuration from the real app's environment variables (contract §1, §3, §4), plus the stand-in's
//! own test knobs (`STANDIN_*`).

use std::time::Duration;

use anyhow::{bail, Result};

/// Which SQL dialect `DB_DRIVER` names, with the app's accepted aliases.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Sqlite,
    MySql,
    Postgres,
}

impl Dialect {
    pub fn parse(driver: &str) -> Result<Dialect> {
        Ok(match driver.trim().to_ascii_lowercase().as_str() {
            "" | "pdo_sqlite" | "sqlite" | "sqlite3" => Dialect::Sqlite,
            "pdo_mysql" | "mysql" | "mysql2" | "mariadb" => Dialect::MySql,
            "pdo_pgsql" | "pgsql" | "postgres" | "postgresql" => Dialect::Postgres,
            other => bail!("DB_DRIVER: unsupported driver {other:?}"),
        })
    }
}

/// Deliberate server bugs, reproducing those the seed benchmark and the real build (contract §8) showed.
/// `STANDIN_FAULT` takes a comma-separated list, so a stand-in can carry several bugs of one real build.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Fault {
    /// bcrypt verify runs on the async runtime's worker threads (the old bcryptjs event-loop stall).
    BlockingBcrypt,
    /// Closed sockets stay in their room (the old `Set<ws>` delete that never matched).
    LeakOnClose,
    /// `POST /api/v1/users` creates the user, then answers 500 (the real build reads an insert id the
    /// ORM does not return; on MariaDB `Unknown column 'NaN'`).
    Users500,
    /// `POST /api/v1/projects` inserts its project under a fresh uuid (not the route's), so the
    /// document lookup fails: no Yjs document, then 500 (the old uuid bug).
    Projects500,
    /// `POST /api/v1/users` answers 500 and writes nothing (a failed write: a real failure).
    UsersFail,
    /// `POST /api/v1/projects` answers 500 and writes nothing (a failed write: a real failure).
    ProjectsFail,
    /// Every relayed frame also goes back to its sender (the real build's "skip the sender" that never
    /// matched, contract §8).
    EchoToSender,
    /// Every 4th Yjs frame is also delivered into another room (a routing bug: no real build known).
    CrossRoom,
    /// Once per container, just after answering its first `/healthcheck`, exit 1 with the message of the
    /// real image's admin race (contract §8), so that Docker's restart policy brings it back; a marker file
    /// in the container's own filesystem (`STANDIN_CRASH_MARKER`) keeps the restarted process up.
    CrashOnce,
    /// The relay is one lane with a cost per recipient (`STANDIN_RELAY_US`, 100 µs by default): each
    /// frame waits for the lane, then takes its room's size times the cost before it is delivered, so a
    /// large room's frames queue behind each other (a relay whose work grows with the room; no real
    /// build known). Small rooms are served in time; past some room size at a given load, not.
    SlowRelay,
    /// The real image's admin bootstrap: find the ADMIN_EMAIL user, then create it with a plain insert and
    /// no conflict handling, `STANDIN_ADMIN_RACE_MS` after the find (the real app's slow boot keeps that
    /// window open). Instances booting together onto an empty database race; the loser exits 1 with
    /// `[FATAL] Bootstrap failed: duplicate key ...`.
    AdminRace,
}

impl Fault {
    /// Every fault with its `STANDIN_FAULT` name (the one list the parser and its error message use).
    const ALL: [(&'static str, Fault); 11] = [
        ("blocking-bcrypt", Fault::BlockingBcrypt),
        ("leak-on-close", Fault::LeakOnClose),
        ("users-500", Fault::Users500),
        ("projects-500", Fault::Projects500),
        ("users-fail", Fault::UsersFail),
        ("projects-fail", Fault::ProjectsFail),
        ("echo-to-sender", Fault::EchoToSender),
        ("cross-room", Fault::CrossRoom),
        ("crash-once", Fault::CrashOnce),
        ("admin-race", Fault::AdminRace),
        ("slow-relay", Fault::SlowRelay),
    ];
}

/// The faults this stand-in runs with (none by default).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Faults(std::collections::BTreeSet<Fault>);

impl Faults {
    pub fn has(&self, f: Fault) -> bool {
        self.0.contains(&f)
    }

    /// `none`, empty, or names from [`Fault::ALL`] separated by commas.
    pub fn parse(text: &str) -> Result<Faults> {
        let mut set = std::collections::BTreeSet::new();
        for name in text
            .split(',')
            .map(str::trim)
            .filter(|n| !n.is_empty() && *n != "none")
        {
            match Fault::ALL.iter().find(|(n, _)| *n == name) {
                Some((_, f)) => {
                    set.insert(*f);
                }
                None => {
                    let known: Vec<&str> = Fault::ALL.iter().map(|(n, _)| *n).collect();
                    bail!(
                        "STANDIN_FAULT: unknown fault {name:?} ({})",
                        known.join("|")
                    )
                }
            }
        }
        Ok(Faults(set))
    }
}

#[derive(Debug, Clone)]
pub struct DbConfig {
    pub dialect: Dialect,
    pub host: String,
    pub port: u16,
    pub name: String,
    pub user: String,
    pub password: String,
    pub path: String,
    pub pool_max: u32,
}

#[derive(Debug, Clone)]
pub struct RedisConfig {
    pub host: String,
    pub port: u16,
    pub password: Option<String>,
}

#[derive(Debug, Clone)]
pub struct Config {
    pub port: u16,
    pub db: DbConfig,
    pub redis: Option<RedisConfig>,
    pub jwt_secret: String,
    /// The secret the sharing routes verify tokens with. The app signs with `API_JWT_SECRET || JWT_SECRET`
    /// but its sharing, admin and pages routes verify with `JWT_SECRET || APP_SECRET` (contract §8); it
    /// works with API_JWT_SECRET alone only by its plugins' order. `STANDIN_SPLIT_SECRETS=1` makes the
    /// stand-in take the app's names literally, so a stack without JWT_SECRET = API_JWT_SECRET fails here.
    pub sharing_secret: String,
    /// Cookie gets `Secure` in production, as the app's image (NODE_ENV=production) does.
    pub production: bool,
    pub admin: Option<(String, String)>,
    pub test_user: Option<(String, String)>,
    pub info_requires_admin: bool,
    pub fault: Faults,
    /// The heartbeat: a ping every this long, and a 4008 close after `pong_timeout` without a pong
    /// (None: `STANDIN_PING_INTERVAL_MS=0`, a server that never pings and never times a client out).
    pub ping_interval: Option<Duration>,
    pub pong_timeout: Duration,
    pub room_cleanup: Duration,
    /// `crash-once`: the file whose existence says this container already crashed once.
    pub crash_marker: std::path::PathBuf,
    /// `admin-race`: how long the bootstrap waits between finding no admin and inserting it.
    pub admin_race_window: Duration,
    /// `slow-relay`: the relay lane's cost per recipient of a frame.
    pub relay_cost: Duration,
    /// What each socket may hold unsent: Bun's `backpressureLimit` and `closeOnBackpressureLimit`.
    pub backpressure: crate::ws::outbox::Backpressure,
}

/// Secrets the newer app image refuses to boot with.
const DEFAULT_JWT_SECRETS: [&str; 2] = ["dev_secret_change_me", "elysia-dev-secret-change-me"];
const DEFAULT_APP_SECRET: &str = "CHANGE_THIS_TO_A_SECRET";

impl Config {
    pub fn from_env() -> Result<Config> {
        Config::from_lookup(|k| std::env::var(k).ok())
    }

    /// Build from any key lookup, so that parsing is testable without touching the process environment.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Config> {
        // Empty means unset, as in the app's `process.env.X || default`.
        let var = |k: &str| get(k).filter(|v| !v.is_empty());
        let num = |k: &str, default: u64| -> Result<u64> {
            match var(k) {
                None => Ok(default),
                Some(v) => v
                    .trim()
                    .parse()
                    .map_err(|_| anyhow::anyhow!("{k}: not a number: {v:?}")),
            }
        };

        let flag = |k: &str| -> Result<bool> {
            match var(k).as_deref().map(str::trim) {
                None | Some("0") | Some("false") => Ok(false),
                Some("1") | Some("true") => Ok(true),
                Some(v) => bail!("{k}: not a boolean (0|1|false|true): {v:?}"),
            }
        };

        let jwt_secret = var("API_JWT_SECRET").or_else(|| var("JWT_SECRET"));
        let jwt_secret = match jwt_secret {
            None => bail!(
                "API_JWT_SECRET (or JWT_SECRET) is empty: refusing to start with no JWT secret"
            ),
            Some(s) if DEFAULT_JWT_SECRETS.contains(&s.as_str()) => {
                bail!("API_JWT_SECRET is the default {s:?}: refusing to start; set a random secret")
            }
            Some(s) => s,
        };
        match var("APP_SECRET") {
            None => bail!("APP_SECRET is empty: refusing to start; set a random secret"),
            Some(s) if s == DEFAULT_APP_SECRET => {
                bail!("APP_SECRET is the default {s:?}: refusing to start; set a random secret")
            }
            Some(_) => {}
        }

        let port = match var("APP_PORT").or_else(|| var("PORT")) {
            None => 8080,
            Some(p) => p
                .trim()
                .parse()
                .map_err(|_| anyhow::anyhow!("APP_PORT/PORT: not a port: {p:?}"))?,
        };

        let dialect = Dialect::parse(&var("DB_DRIVER").unwrap_or_default())?;
        let default_db_port = match dialect {
            Dialect::Postgres => 5432,
            _ => 3306,
        };
        let db = DbConfig {
            dialect,
            host: var("DB_HOST").unwrap_or_else(|| "localhost".into()),
            port: num("DB_PORT", default_db_port)? as u16,
            name: var("DB_NAME").unwrap_or_else(|| "exelearning".into()),
            user: var("DB_USER").unwrap_or_else(|| "exelearning".into()),
            password: var("DB_PASSWORD").unwrap_or_default(),
            path: var("DB_PATH").unwrap_or_else(|| "data/exelearning.db".into()),
            pool_max: num("DB_POOL_MAX", 10)?.max(1) as u32,
        };

        let redis = var("REDIS_HOST").map(|host| -> Result<RedisConfig> {
            Ok(RedisConfig {
                host,
                port: num("REDIS_PORT", 6379)? as u16,
                password: var("REDIS_PASSWORD"),
            })
        });
        let redis = redis.transpose()?;

        let pair = |a: &str, b: &str| Some((var(a)?, var(b)?));
        let app_env = var("APP_ENV").unwrap_or_else(|| "prod".into());
        let test_user = if app_env == "dev" {
            Some((
                var("TEST_USER_EMAIL").unwrap_or_else(|| "user@exelearning.net".into()),
                var("TEST_USER_PASSWORD").unwrap_or_else(|| "1234".into()),
            ))
        } else {
            None
        };

        let sharing_secret = if var("STANDIN_SPLIT_SECRETS").as_deref() == Some("1") {
            var("JWT_SECRET")
                .or_else(|| var("APP_SECRET"))
                .expect("APP_SECRET was checked above")
        } else {
            jwt_secret.clone()
        };

        let fault = Faults::parse(&var("STANDIN_FAULT").unwrap_or_default())?;

        let ping_ms = num("STANDIN_PING_INTERVAL_MS", 30_000)?;
        Ok(Config {
            port,
            db,
            redis,
            jwt_secret,
            sharing_secret,
            production: var("NODE_ENV").as_deref() == Some("production"),
            admin: pair("ADMIN_EMAIL", "ADMIN_PASSWORD"),
            test_user,
            info_requires_admin: var("STANDIN_INFO_REQUIRES_ADMIN").as_deref() == Some("1"),
            fault,
            ping_interval: (ping_ms > 0).then(|| Duration::from_millis(ping_ms)),
            // The app closes after interval + 10 s without a pong.
            pong_timeout: Duration::from_millis(num("STANDIN_PONG_TIMEOUT_MS", ping_ms + 10_000)?),
            room_cleanup: Duration::from_millis(num("STANDIN_ROOM_CLEANUP_MS", 30_000)?),
            // /tmp of the container's own filesystem: it survives a restart, not a recreate, and is
            // never the data volume that every instance of an HA stack shares.
            crash_marker: var("STANDIN_CRASH_MARKER")
                .unwrap_or_else(|| "/tmp/exe-standin.crashed-once".into())
                .into(),
            admin_race_window: Duration::from_millis(num("STANDIN_ADMIN_RACE_MS", 1000)?),
            relay_cost: Duration::from_micros(num("STANDIN_RELAY_US", 100)?),
            backpressure: crate::ws::outbox::Backpressure {
                limit: num(
                    "STANDIN_BACKPRESSURE_LIMIT",
                    crate::ws::outbox::DEFAULT_LIMIT as u64,
                )? as usize,
                close_on_limit: flag("STANDIN_CLOSE_ON_BACKPRESSURE_LIMIT")?,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn cfg(pairs: &[(&str, &str)]) -> Result<Config> {
        let m: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Config::from_lookup(|k| m.get(k).cloned())
    }

    const OK: [(&str, &str); 2] = [("API_JWT_SECRET", "s3cret"), ("APP_SECRET", "a")];

    #[test]
    fn defaults() {
        let c = cfg(&OK).unwrap();
        assert_eq!(c.port, 8080);
        assert_eq!(c.db.dialect, Dialect::Sqlite);
        assert_eq!(c.db.path, "data/exelearning.db");
        assert_eq!(c.pong_timeout, Duration::from_secs(40));
        assert_eq!(c.ping_interval, Some(Duration::from_secs(30)));
        let silent = cfg(&[OK[0], OK[1], ("STANDIN_PING_INTERVAL_MS", "0")]).unwrap();
        assert_eq!(silent.ping_interval, None, "0: a server that never pings");
        assert!(c.redis.is_none() && c.admin.is_none() && c.test_user.is_none());
        // Bun's defaults: 16 MiB may wait per socket, and a socket past it stays open.
        assert_eq!(c.backpressure.limit, 16 << 20);
        assert!(!c.backpressure.close_on_limit);
    }

    #[test]
    fn the_backpressure_knobs_are_bytes_and_a_boolean() {
        let with = |k: &str, v: &str| cfg(&[OK[0], OK[1], (k, v)]);
        let small = with("STANDIN_BACKPRESSURE_LIMIT", "65536").unwrap();
        assert_eq!(small.backpressure.limit, 65536);
        let close = with("STANDIN_CLOSE_ON_BACKPRESSURE_LIMIT", "1").unwrap();
        assert!(close.backpressure.close_on_limit);
        let err = with("STANDIN_CLOSE_ON_BACKPRESSURE_LIMIT", "yes")
            .unwrap_err()
            .to_string();
        assert!(err.contains("STANDIN_CLOSE_ON_BACKPRESSURE_LIMIT"), "{err}");
        assert!(with("STANDIN_BACKPRESSURE_LIMIT", "16MiB").is_err());
    }

    #[test]
    fn faults_are_a_comma_list_and_unknown_names_are_refused() {
        let with = |f: &str| cfg(&[OK[0], OK[1], ("STANDIN_FAULT", f)]);
        assert_eq!(with("none").unwrap().fault, Faults::default());
        let both = with("leak-on-close, blocking-bcrypt").unwrap().fault;
        assert!(both.has(Fault::LeakOnClose) && both.has(Fault::BlockingBcrypt));
        let one = with("leak-on-close").unwrap().fault;
        assert!(one.has(Fault::LeakOnClose) && !one.has(Fault::BlockingBcrypt));
        let bugs = with("users-500,projects-500").unwrap().fault;
        assert!(bugs.has(Fault::Users500) && bugs.has(Fault::Projects500));
        assert!(!bugs.has(Fault::UsersFail) && !bugs.has(Fault::ProjectsFail));
        let err = with("leak-on-close,nope").unwrap_err().to_string();
        assert!(
            err.contains("\"nope\"") && err.contains("leak-on-close"),
            "{err}"
        );
    }

    #[test]
    fn split_secrets_verify_sharing_with_jwt_secret_or_app_secret() {
        let split = ("STANDIN_SPLIT_SECRETS", "1");
        assert_eq!(cfg(&OK).unwrap().sharing_secret, "s3cret");
        assert_eq!(cfg(&[OK[0], OK[1], split]).unwrap().sharing_secret, "a");
        let with_jwt = cfg(&[OK[0], OK[1], split, ("JWT_SECRET", "j")]).unwrap();
        assert_eq!(
            (
                with_jwt.jwt_secret.as_str(),
                with_jwt.sharing_secret.as_str()
            ),
            ("s3cret", "j")
        );
    }

    #[test]
    fn refuses_default_secrets() {
        for bad in [
            vec![("APP_SECRET", "a")],
            vec![
                ("API_JWT_SECRET", "dev_secret_change_me"),
                ("APP_SECRET", "a"),
            ],
            vec![
                ("JWT_SECRET", "elysia-dev-secret-change-me"),
                ("APP_SECRET", "a"),
            ],
            vec![
                ("API_JWT_SECRET", "x"),
                ("APP_SECRET", "CHANGE_THIS_TO_A_SECRET"),
            ],
            vec![("API_JWT_SECRET", "x")],
        ] {
            assert!(cfg(&bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            cfg(&[("JWT_SECRET", "j"), ("APP_SECRET", "a")])
                .unwrap()
                .jwt_secret,
            "j"
        );
    }

    #[test]
    fn driver_aliases() {
        for (d, want) in [
            ("pdo_mysql", Dialect::MySql),
            ("mariadb", Dialect::MySql),
            ("pdo_pgsql", Dialect::Postgres),
            ("postgresql", Dialect::Postgres),
            ("sqlite3", Dialect::Sqlite),
        ] {
            assert_eq!(Dialect::parse(d).unwrap(), want);
        }
        assert!(Dialect::parse("oracle").is_err());
    }
}
