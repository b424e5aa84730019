//! `exectl render` and `exectl validate` as a user runs them: real binary, real files, real nginx -t.

use assert_cmd::Command;
use exectl_core::compose;
use std::path::Path;

struct Env {
    state: tempfile::TempDir,
    work: tempfile::TempDir,
}

impl Env {
    fn new() -> Env {
        Env {
            state: tempfile::tempdir().unwrap(),
            work: tempfile::tempdir().unwrap(),
        }
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::cargo_bin("exectl").unwrap();
        c.env("EXECTL_STATE_DIR", self.state.path())
            .current_dir(self.work.path())
            .args(args);
        c
    }

    fn out(&self, name: &str) -> String {
        self.work.path().join(name).display().to_string()
    }
}

fn read(dir: &str, file: &str) -> String {
    std::fs::read_to_string(Path::new(dir).join(file)).unwrap()
}

/// The `server` lines of one upstream block of nginx.conf.
fn upstream_servers(conf: &str, upstream: &str) -> Vec<String> {
    let start = conf
        .find(&format!("upstream {upstream} {{"))
        .expect("upstream block");
    let block = &conf[start..start + conf[start..].find('}').unwrap()];
    block
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("server "))
        .map(String::from)
        .collect()
}

#[test]
fn ha_four_instances_tuned_least_conn() {
    let env = Env::new();
    let d = env.out("ha4");
    env.cmd(&[
        "render",
        "ha",
        "--instances",
        "4",
        "--nginx",
        "tuned-least-conn",
        "--out",
        &d,
    ])
    .assert()
    .success();
    let file = compose::parse(&read(&d, "compose.yaml")).unwrap();
    let names: Vec<&str> = file.services.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        ["app-1", "app-2", "app-3", "app-4", "nginx", "postgres", "redis"]
    );
    let jwt: Vec<&String> = (1..=4)
        .map(|i| &file.services[&format!("app-{i}")].environment["API_JWT_SECRET"])
        .collect();
    assert!(
        jwt.iter().all(|j| *j == "${API_JWT_SECRET}"),
        "one shared JWT secret"
    );
    for i in 1..=4 {
        let app = &file.services[&format!("app-{i}")];
        assert_eq!(app.environment["REDIS_HOST"], "redis");
        assert_eq!(app.ulimits["nofile"].soft, 200_000);
        let limits = &app.deploy.as_ref().unwrap().resources.limits;
        assert_eq!((limits.cpus.as_str(), limits.memory.as_str()), ("2", "2g"));
        assert_eq!(app.depends_on["postgres"].condition, "service_healthy");
        assert_eq!(app.labels["exectl.service"], format!("app-{i}"));
    }
    let nginx = &file.services["nginx"];
    assert!(
        nginx.healthcheck.is_none(),
        "no Docker healthcheck on nginx"
    );
    assert_eq!(nginx.ulimits["nofile"].hard, 200_000);
    assert_eq!(nginx.depends_on.len(), 4);

    let conf = read(&d, "nginx/nginx.conf");
    assert!(conf.contains("worker_connections 32768;"));
    assert!(conf.contains("worker_rlimit_nofile 200000;"));
    assert!(!conf.contains("ip_hash"));
    for upstream in ["exelearning_backend", "exelearning_websocket"] {
        let servers = upstream_servers(&conf, upstream);
        assert_eq!(servers.len(), 4, "{upstream}: {servers:?}");
        let start = conf.find(&format!("upstream {upstream} {{")).unwrap();
        assert!(conf[start..].lines().nth(1).unwrap().trim() == "least_conn;");
    }
}

#[test]
fn ha_baseline_default_is_the_seeds_baseline() {
    let env = Env::new();
    let d = env.out("base");
    env.cmd(&[
        "render",
        "ha",
        "--instances",
        "4",
        "--nginx",
        "baseline-default",
        "--out",
        &d,
    ])
    .assert()
    .success();
    let conf = read(&d, "nginx/nginx.conf");
    assert!(conf.contains("worker_connections 1024;"));
    assert!(!conf.contains("worker_rlimit_nofile"));
    assert!(!conf.contains("least_conn"));
    assert_eq!(conf.matches("ip_hash;").count(), 2);
    assert_eq!(upstream_servers(&conf, "exelearning_websocket").len(), 4);
}

#[test]
fn single_with_each_database() {
    let env = Env::new();
    for (db, service) in [
        ("mariadb", Some("mariadb")),
        ("postgres", Some("postgres")),
        ("sqlite", None),
    ] {
        let d = env.out(db);
        let mut args = vec!["render", "single", "--out", &d];
        if db != "mariadb" {
            args.extend(["--db", db]); // mariadb is the default
        }
        env.cmd(&args).assert().success();
        let file = compose::parse(&read(&d, "compose.yaml")).unwrap();
        let mut want = vec!["app", "traefik"];
        want.extend(service);
        want.sort();
        let names: Vec<&str> = file.services.keys().map(String::as_str).collect();
        assert_eq!(names, want, "{db}");
        let app = &file.services["app"];
        match service {
            Some(s) => assert_eq!(app.environment["DB_HOST"], s),
            None => {
                assert_eq!(app.environment["DB_DRIVER"], "pdo_sqlite");
                assert_eq!(app.environment["DB_PATH"], "/mnt/data/exelearning.db");
            }
        }
        let dynamic = read(&d, "traefik/dynamic.yaml");
        assert!(dynamic.contains("Host(`exe.localhost`)"));
        assert!(dynamic.contains("http://app:8080"));
        assert!(!Path::new(&d).join("nginx").exists());
    }
}

#[test]
#[ignore = "needs nginx (nginx -t); bash scripts/test.sh runs it"]
fn validate_passes_every_variant_with_real_nginx() {
    let env = Env::new();
    let mut variants: Vec<Vec<&str>> = ["mariadb", "postgres", "sqlite"]
        .iter()
        .map(|db| vec!["validate", "single", "--db", db])
        .collect();
    for nginx in ["baseline-default", "tuned-ip-hash", "tuned-least-conn"] {
        for n in ["2", "4"] {
            variants.push(vec!["validate", "ha", "--nginx", nginx, "--instances", n]);
        }
    }
    for args in variants {
        let out = env.cmd(&args).output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{args:?}: {stdout}");
        if args[1] == "ha" {
            assert!(
                stdout.contains("PASS nginx/nginx.conf [nginx -t]"),
                "{stdout}"
            );
        } else {
            assert!(stdout.contains("PASS traefik/dynamic.yaml"), "{stdout}");
        }
        assert!(
            stdout.contains("PASS compose.yaml [compose typed model]"),
            "{stdout}"
        );
    }
}

/// The line of `needle` in `text`, 1-based.
fn line_of(text: &str, needle: &str) -> usize {
    text.lines().position(|l| l.contains(needle)).unwrap() + 1
}

#[test]
#[ignore = "needs nginx (nginx -t); bash scripts/test.sh runs it"]
fn validate_names_file_and_line_of_a_broken_override() {
    let env = Env::new();
    let good = env.out("good");
    env.cmd(&["render", "ha", "--out", &good])
        .assert()
        .success();
    let conf = read(&good, "nginx/nginx.conf");
    // Without the `;` nginx reads on into the next line, the closing brace, and fails there.
    let want = format!("nginx/nginx.conf:{}", line_of(&conf, "keepalive 32;") + 1);

    let templates = env.work.path().join("tpl");
    std::fs::create_dir_all(templates.join("nginx")).unwrap();
    let src = include_str!("../nginx/nginx.conf.tera").replace("keepalive 32;", "keepalive 32");
    std::fs::write(templates.join("nginx/nginx.conf.tera"), src).unwrap();
    let t = templates.display().to_string();
    let out = env
        .cmd(&["validate", "ha", "--templates", &t])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains(&format!("FAIL {want} [nginx -t]")),
        "want {want}: {stdout}"
    );

    // A compose template with a misspelt key fails the typed re-parse at its line.
    std::fs::create_dir_all(templates.join("compose")).unwrap();
    let src = include_str!("../compose/compose.yaml.tera").replacen("restart:", "restrat:", 1);
    std::fs::write(templates.join("compose/compose.yaml.tera"), src).unwrap();
    let rendered = read(&good, "compose.yaml");
    let want = format!("compose.yaml:{}", line_of(&rendered, "restart:"));
    let out = env
        .cmd(&["validate", "ha", "--templates", &t])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(&format!("FAIL {want}")),
        "want {want}: {stdout}"
    );
    // render refuses it too, and writes nothing
    let d = env.out("broken");
    env.cmd(&["render", "ha", "--templates", &t, "--out", &d])
        .assert()
        .code(1);
    assert!(!Path::new(&d).exists());
}

#[test]
fn bad_input_exits_2_names_the_field_and_writes_nothing() {
    let env = Env::new();
    std::fs::write(
        env.work.path().join("bad.yaml"),
        "stack: a\ninstances: 2\ndb: postgres: x\n",
    )
    .unwrap();
    std::fs::write(
        env.work.path().join("typo.yaml"),
        "topology: ha\ninstancs: 2\n",
    )
    .unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["ha", "--instances", "0"], "--instances"),
        (vec!["ha", "--instances", "65"], "--instances"),
        (vec!["single", "--instances", "3"], "--instances"),
        (vec!["ha", "--nginx", "tuned-round-robin"], "--nginx"),
        (vec!["ha", "--db", "sqlite"], "--db"),
        (vec!["ha", "--cpus", "-1"], "--cpus"),
        (
            vec![
                "ha",
                "--worker-connections",
                "32768",
                "--worker-rlimit-nofile",
                "50000",
            ],
            "--worker-rlimit-nofile",
        ),
        (vec!["ha", "--set", "DB_HOST=elsewhere"], "--set"),
        (vec!["ha", "--set", "no-equals"], "--set"),
        (vec!["ha", "--config", "bad.yaml"], "bad.yaml:3"),
        (vec!["--config", "typo.yaml"], "typo.yaml:2"),
        (vec!["ha", "--memory", "lots"], "--memory"),
        (vec![], "topology"),
    ];
    for (args, field) in cases {
        let d = env.out("never");
        let mut full = vec!["render"];
        full.extend(&args);
        full.extend(["--out", &d]);
        let out = env.cmd(&full).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
        assert!(
            stderr.contains(field) && stderr.contains("fix:"),
            "{args:?}: {stderr}"
        );
        assert!(!Path::new(&d).exists(), "{args:?} wrote files");
    }
    assert!(
        !env.state.path().join("local").exists(),
        "bad input must not create state"
    );
}

#[test]
fn rendering_twice_gives_identical_bytes_and_hides_secrets() {
    let env = Env::new();
    let (a, b) = (env.out("a"), env.out("b"));
    let first = env
        .cmd(&["render", "ha", "--instances", "3", "--out", &a])
        .output()
        .unwrap();
    env.cmd(&["render", "ha", "--instances", "3", "--out", &b])
        .assert()
        .success();
    for f in [
        "compose.yaml",
        ".env",
        "nginx/nginx.conf",
        "exectl.lock.json",
    ] {
        assert_eq!(read(&a, f), read(&b, f), "{f}");
    }
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(Path::new(&a).join(".env"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    let stdout = String::from_utf8_lossy(&first.stdout);
    let compose = read(&a, "compose.yaml");
    for line in read(&a, ".env").lines().filter(|l| !l.starts_with('#')) {
        let (_, secret) = line.split_once('=').unwrap();
        assert!(secret.len() >= 32);
        assert!(!stdout.contains(secret) && !compose.contains(secret));
        assert!(!read(&a, "exectl.lock.json").contains(secret));
    }
    // Another stack gets other secrets.
    let c = env.out("c");
    env.cmd(&["render", "ha", "--stack", "other", "--out", &c])
        .assert()
        .success();
    assert_ne!(read(&a, ".env"), read(&c, ".env"));
}

#[test]
#[ignore = "needs nginx (nginx -t); bash scripts/test.sh runs it"]
fn hostile_set_values_survive_compose_quoting() {
    let env = Env::new();
    let d = env.out("set");
    let value = "a \"b\" 'c' $HOME ${X} # not a comment\nsecond line\\";
    let set = format!("WEIRD={value}");
    env.cmd(&[
        "render",
        "ha",
        "--set",
        &set,
        "--set",
        "DB_POOL_MAX=50",
        "--out",
        &d,
    ])
    .assert()
    .success();
    let file = compose::parse(&read(&d, "compose.yaml")).unwrap();
    let env_map = &file.services["app-2"].environment;
    // Compose reads `$$` as a literal `$`.
    assert_eq!(env_map["WEIRD"].replace("$$", "$"), value);
    assert_eq!(env_map["DB_POOL_MAX"], "50");
    let out = env
        .cmd(&["validate", "ha", "--set", &set])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn exectl_yaml_is_read_and_flags_override_it() {
    let env = Env::new();
    std::fs::write(
        env.work.path().join("exectl.yaml"),
        "topology: ha\ninstances: 3\nnginx: tuned-ip-hash\nenv:\n  DB_POOL_MAX: 40\nimages:\n  app: local/app:1\n",
    )
    .unwrap();
    let d = env.out("y");
    env.cmd(&["render", "--instances", "5", "--out", &d])
        .assert()
        .success();
    let file = compose::parse(&read(&d, "compose.yaml")).unwrap();
    assert!(file.services.contains_key("app-5"));
    assert_eq!(file.services["app-1"].image, "local/app:1");
    assert_eq!(file.services["app-1"].environment["DB_POOL_MAX"], "40");
    assert!(read(&d, "nginx/nginx.conf").contains("ip_hash;"));
    let lock: serde_json::Value = serde_json::from_str(&read(&d, "exectl.lock.json")).unwrap();
    assert_eq!(lock["spec"]["instances"], 5);
    assert_eq!(lock["spec"]["nginx"]["variant"], "tuned-ip-hash");
    assert_eq!(lock["files"].as_object().unwrap().len(), 3);
}

#[test]
fn images_file_maps_every_service() {
    let env = Env::new();
    std::fs::write(
        env.work.path().join("images.yaml"),
        "app: exectl-fixture/standin:latest\npostgres: exectl-fixture/postgres:15\nnginx: exectl-fixture/nginx:1\nredis: exectl-fixture/redis:7\n",
    )
    .unwrap();
    let d = env.out("i");
    env.cmd(&["render", "ha", "--images", "images.yaml", "--out", &d])
        .assert()
        .success();
    let file = compose::parse(&read(&d, "compose.yaml")).unwrap();
    assert_eq!(
        file.services["app-1"].image,
        "exectl-fixture/standin:latest"
    );
    assert_eq!(file.services["nginx"].image, "exectl-fixture/nginx:1");
    std::fs::write(env.work.path().join("bad-images.yaml"), "memcached: x\n").unwrap();
    env.cmd(&["render", "ha", "--images", "bad-images.yaml", "--out", &d])
        .assert()
        .code(2);
}

/// Run exectl and return (exit code, stdout, stderr).
fn run(env: &Env, args: &[&str]) -> (Option<i32>, String, String) {
    let out = env.cmd(args).output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

/// Bad input: exit 2, one line on stderr naming `field` with a fix, nothing written.
fn refused(env: &Env, args: &[&str], field: &str) -> String {
    let (code, _, stderr) = run(env, args);
    assert_eq!(code, Some(2), "{args:?}: {stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
    assert!(
        stderr.contains(field) && stderr.contains("fix:"),
        "{args:?}: want {field}: {stderr}"
    );
    stderr
}

#[test]
fn user_templates_get_no_secrets_and_no_way_out() {
    let env = Env::new();
    let t = env.work.path().join("tpl");
    std::fs::create_dir_all(t.join("nginx")).unwrap();
    std::fs::write(t.join("nginx/nginx.conf.tera"), "{{ __tera_context }}\n").unwrap();
    let ts = t.display().to_string();
    // The generated secrets first (today's flags), then with a --set-secret too.
    for (name, extra) in [
        ("ctx", vec![]),
        (
            "ctx2",
            vec!["--set-secret", "SMTP_PASSWORD=setsecretvalue123"],
        ),
    ] {
        let d = env.out(name);
        let mut args = vec!["render", "ha", "--templates", &ts, "--out", &d];
        args.extend(extra);
        env.cmd(&args).assert().success();
        let conf = read(&d, "nginx/nginx.conf");
        assert!(conf.contains("exelearning"), "the context is there: {conf}");
        let env_file = read(&d, ".env");
        for line in env_file.lines().filter(|l| !l.starts_with('#')) {
            let (_, secret) = line.split_once('=').unwrap();
            assert!(
                !conf.contains(secret),
                "a secret reached nginx.conf: {line}"
            );
        }
    }

    // A symlink out of the folder (to a file the user may not even be meant to read) is refused.
    std::fs::remove_file(t.join("nginx/nginx.conf.tera")).unwrap();
    let outside = env.work.path().join("outside.tera");
    std::fs::write(&outside, "worker_processes 1;\n").unwrap();
    std::os::unix::fs::symlink(&outside, t.join("nginx/nginx.conf.tera")).unwrap();
    let d = env.out("never");
    let e = refused(
        &env,
        &["render", "ha", "--templates", &ts, "--out", &d],
        "--templates",
    );
    assert!(e.contains("symlink"), "{e}");
    // ... and so is a subfolder that is a symlink out.
    std::fs::remove_dir_all(t.join("nginx")).unwrap();
    let elsewhere = env.work.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::fs::write(elsewhere.join("nginx.conf.tera"), "x\n").unwrap();
    std::os::unix::fs::symlink(&elsewhere, t.join("nginx")).unwrap();
    refused(
        &env,
        &["render", "ha", "--templates", &ts, "--out", &d],
        "symlink",
    );
    // A symlink inside the folder is fine.
    std::fs::remove_file(t.join("nginx")).unwrap();
    std::fs::create_dir_all(t.join("nginx")).unwrap();
    std::fs::write(
        t.join("nginx/real.conf"),
        include_str!("../nginx/nginx.conf.tera"),
    )
    .unwrap();
    std::os::unix::fs::symlink("real.conf", t.join("nginx/nginx.conf.tera")).unwrap();
    let ok = env.out("inside");
    env.cmd(&["render", "ha", "--templates", &ts, "--out", &ok])
        .assert()
        .success();

    // A folder that does not exist, is a file, or overrides nothing; a template that does not parse.
    let empty = env.work.path().join("empty");
    std::fs::create_dir_all(empty.join("nginx")).unwrap();
    std::fs::write(empty.join("nginx/nginx.conf"), "forgot .tera\n").unwrap();
    let broken = env.work.path().join("broken");
    std::fs::create_dir_all(broken.join("nginx")).unwrap();
    std::fs::write(broken.join("nginx/nginx.conf.tera"), "ok\n{% if %}\n").unwrap();
    for (dir, needle) in [
        ("no-such-folder", "no-such-folder"),
        ("outside.tera", "not a folder"),
        ("empty", "overrides nothing"),
        ("broken", "nginx.conf.tera:2"),
    ] {
        let e = refused(
            &env,
            &["render", "ha", "--templates", dir, "--out", &d],
            "--templates",
        );
        assert!(e.contains(needle), "{dir}: {e}");
        assert!(!Path::new(&d).exists(), "{dir} wrote files");
    }
}

#[test]
fn render_out_that_is_not_a_folder_is_bad_input() {
    let env = Env::new();
    let file = env.work.path().join("a-file");
    std::fs::write(&file, "keep me\n").unwrap();
    let f = file.display().to_string();
    refused(&env, &["render", "ha", "--out", &f], "--out");
    refused(
        &env,
        &["render", "ha", "--out", &format!("{f}/below")],
        "--out",
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "keep me\n");
    assert!(
        !env.state.path().join("local").exists(),
        "bad input must not create state"
    );
}

#[test]
fn relative_state_folder_is_refused() {
    let env = Env::new();
    let d = env.out("r");
    for (var, cmd) in [
        ("EXECTL_STATE_DIR", vec!["render", "ha", "--out", &d]),
        ("EXECTL_STATE_DIR", vec!["runs", "list"]),
        ("EXECTL_STATE_DIR", vec!["validate", "ha"]),
        ("XDG_STATE_HOME", vec!["render", "ha", "--out", &d]),
    ] {
        let mut c = Command::cargo_bin("exectl").unwrap();
        c.current_dir(env.work.path()).args(&cmd);
        c.env_remove("EXECTL_STATE_DIR");
        c.env(var, "relative/state");
        let out = c.output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{var} {cmd:?}: {stderr}");
        assert!(
            stderr.contains(var) && stderr.contains("absolute"),
            "{stderr}"
        );
        assert!(!env.work.path().join("relative").exists(), "{var} {cmd:?}");
    }
    assert!(!Path::new(&d).exists());
}

#[test]
#[ignore = "needs nginx (nginx -t); bash scripts/test.sh runs it"]
fn set_secret_reaches_only_the_env_file() {
    let env = Env::new();
    let secret = "Zq9-setsecret-4711";
    let d = env.out("s");
    let (code, stdout, stderr) = run(
        &env,
        &[
            "render",
            "ha",
            "--set-secret",
            &format!("SMTP_PASSWORD={secret}"),
            "--set",
            "PLAIN=visible",
            "--json",
            "--out",
            &d,
        ],
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert!(!stdout.contains(secret) && !stderr.contains(secret));
    assert!(read(&d, ".env").contains(&format!("SMTP_PASSWORD={secret}\n")));
    let file = compose::parse(&read(&d, "compose.yaml")).unwrap();
    assert_eq!(
        file.services["app-1"].environment["SMTP_PASSWORD"],
        "${SMTP_PASSWORD}"
    );
    for f in ["compose.yaml", "nginx/nginx.conf", "exectl.lock.json"] {
        assert!(!read(&d, f).contains(secret), "{f}");
    }
    let lock: serde_json::Value = serde_json::from_str(&read(&d, "exectl.lock.json")).unwrap();
    let shown = lock["spec"]["secret_env"]["SMTP_PASSWORD"]
        .as_str()
        .unwrap();
    assert!(shown.starts_with("<secret sha256:"), "{shown}");
    assert_eq!(lock["spec"]["env"]["PLAIN"], "visible", "--set is recorded");
    // validate accepts it and prints no value either.
    let (code, stdout, _) = run(
        &env,
        &[
            "validate",
            "ha",
            "--set-secret",
            &format!("SMTP_PASSWORD={secret}"),
        ],
    );
    assert_eq!(code, Some(0), "{stdout}");
    assert!(!stdout.contains(secret));
    // Refusals name the key, never the value.
    for (arg, needle) in [
        (format!("smtp={secret}"), "smtp=<redacted>"),
        (format!("DB_ROOT_PASSWORD={secret}"), "exectl generates"),
        (format!("PLAIN={secret}"), "also given with --set"),
        (format!("X={secret} with space"), "unquoted"),
        (secret.to_string(), "KEY=VALUE"),
    ] {
        let e = refused(
            &env,
            &[
                "render",
                "ha",
                "--set",
                "PLAIN=visible",
                "--set-secret",
                &arg,
                "--out",
                &env.out("never"),
            ],
            "--set-secret",
        );
        assert!(e.contains(needle) && !e.contains(secret), "{e}");
    }
}

#[test]
fn yaml_duplicates_nulls_and_unknown_image_keys_name_their_line() {
    let env = Env::new();
    let w = env.work.path();
    let cases = [
        (
            "dup.yaml",
            "topology: ha\nstack: a\ninstances: 2\nstack: b\n",
            "dup.yaml:4",
        ),
        (
            "null.yaml",
            "topology: ha\ninstances: 2\nstack:\n",
            "null.yaml:3",
        ),
        (
            "nullenv.yaml",
            "topology: ha\nenv:\n  A: 1\n  B:\n",
            "nullenv.yaml:4",
        ),
        (
            "dupenv.yaml",
            "topology: ha\nenv:\n  A: 1\n  A: 2\n",
            "dupenv.yaml:4",
        ),
        (
            "listenv.yaml",
            "topology: ha\nenv:\n  A: 1\n\n  B: [1]\n",
            "listenv.yaml:5",
        ),
        (
            "img.yaml",
            "topology: ha\nimages:\n  app: x\n  memcached: y\n",
            "img.yaml:4",
        ),
    ];
    for (name, text, want) in cases {
        std::fs::write(w.join(name), text).unwrap();
        let e = refused(
            &env,
            &["render", "--config", name, "--out", &env.out("never")],
            want,
        );
        assert!(!e.contains(":1\""), "{e}");
    }
    let images = [
        ("i-dup.yaml", "app: a\nnginx: b\napp: c\n", "i-dup.yaml:3"),
        (
            "i-unknown.yaml",
            "app: a\n# c\nmemcached: c\n",
            "i-unknown.yaml:3",
        ),
        ("i-null.yaml", "app: a\nnginx:\n", "i-null.yaml:2"),
    ];
    for (name, text, want) in images {
        std::fs::write(w.join(name), text).unwrap();
        let e = refused(
            &env,
            &["render", "ha", "--images", name, "--out", &env.out("never")],
            want,
        );
        assert!(e.contains("--images"), "{e}");
    }
}

#[test]
fn runs_diff_prints_one_line_per_change_and_plain_file_keys() {
    use exectl::state::runs::{self, EngineRecord, ExectlRecord, Record};
    use exectl_core::spec::{self, Raw, SpecInput};
    let env = Env::new();
    let record = |note: &str, env_hash: &str| {
        let s = spec::resolve(SpecInput {
            topology: Some(Raw::flag("topology", "ha")),
            env: vec![Raw::flag("--set", format!("NOTE={note}"))],
            ..Default::default()
        })
        .unwrap();
        let mut r = Record {
            id: String::new(),
            created: "t".into(),
            created_epoch: 0,
            stack: s.stack.clone(),
            knobs: runs::knobs(&s),
            spec: serde_json::to_value(&s).unwrap(),
            files: [(".env".to_string(), env_hash.to_string())].into(),
            images: Default::default(),
            engine: EngineRecord::default(),
            exectl: ExectlRecord::current(),
            changed: 0,
            seconds: 0.0,
            fitted: vec![],
        };
        runs::save_next(&env.state.path().join("runs"), &s, &mut r).unwrap();
        r.id
    };
    let a = record("one line", "aaaa");
    let b = record("first\nsecond", "bbbb");
    let (code, stdout, stderr) = run(&env, &["runs", "diff", &a, &b]);
    assert_eq!(code, Some(0), "{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines[1].split_whitespace().collect::<Vec<_>>(),
        ["files/.env", "aaaa", "->", "bbbb"],
        "{stdout}"
    );
    assert_eq!(
        lines[2].trim(),
        format!(
            "{:<34} {} -> {}",
            "knobs.env.NOTE", "one line", "\"first\\nsecond\""
        ),
        "{stdout}"
    );
    assert_eq!(lines.len(), 4, "{stdout}");
}
