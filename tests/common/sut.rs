//! A fake remote system under test: a network namespace with its own address, running sshd (port 2222, 2223
//! without stream-local forwarding, 2224 without the sftp subsystem) and a second Docker engine loaded with the fixture images
//! (tests/sut/sut.sh). Dropping the `Sut` tears it down.
//!
//! Each test binary that uses one picks its own NAME and INDEX (1..50, the subnet 10.199.INDEX.0/24), so
//! several can run at once.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::{Command, Output};

pub const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/sut/sut.sh");

pub struct Sut {
    /// The SUT's address, 10.199.INDEX.2.
    pub addr: String,
    pub ssh_port: u16,
    /// An sshd that refuses stream-local (unix socket) forwarding.
    pub ssh_port_nofwd: u16,
    /// An sshd with no sftp subsystem (a hardened host): uploads must go by exec.
    pub ssh_port_nosftp: u16,
    /// The client key authorized for root (ed25519, unencrypted).
    pub key: PathBuf,
    /// A key that is not authorized.
    pub wrong_key: PathBuf,
    /// `[ADDR]:2222`, `[ADDR]:2223` and `[ADDR]:2224` with the SUT's host key.
    pub known_hosts: PathBuf,
    /// The SUT engine's unix socket: the same path on the host and on the SUT.
    pub docker_sock: String,
    /// The SUT's folder (keys, configs, logs, the engine's state).
    pub dir: PathBuf,
    name: String,
    /// Last: released after the teardown.
    _rig: super::RigLock,
}

impl Sut {
    /// Bring SUT `name` up on 10.199.`index`.0/24 with every fixture image, replacing leftovers of the same
    /// name. Panics with the script's output on failure.
    pub fn up(name: &str, index: u8) -> Sut {
        Sut::start(name, index, None)
    }

    /// Like `up`, loading only these images (faster: loading all the fixtures takes ~15 s).
    pub fn up_with_images(name: &str, index: u8, images: &[&str]) -> Sut {
        Sut::start(name, index, Some(images))
    }

    /// Like `up_with_images`, with more of sut.sh's environment (SUT_NOFILE, SUT_DAEMON_JSON).
    pub fn up_with_env(name: &str, index: u8, images: &[&str], env: &[(&str, &str)]) -> Sut {
        Sut::start_with(name, index, Some(images), env)
    }

    fn start(name: &str, index: u8, images: Option<&[&str]>) -> Sut {
        Sut::start_with(name, index, images, &[])
    }

    fn start_with(name: &str, index: u8, images: Option<&[&str]>, env: &[(&str, &str)]) -> Sut {
        let rig = super::rig_lock(name);
        let mut cmd = Command::new("bash");
        cmd.args([SCRIPT, "up", name, &index.to_string()]);
        if let Some(images) = images {
            cmd.env("SUT_IMAGES", images.join(" "));
        }
        cmd.envs(env.iter().copied());
        let out = cmd.output().expect("run tests/sut/sut.sh");
        if !out.status.success() {
            // Leave nothing half made behind.
            let _ = Command::new("bash").args([SCRIPT, "down", name]).output();
            panic!(
                "sut.sh up {name} {index} failed ({:?}):\n{}\n{}",
                out.status.code(),
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Sut::parse(name, &String::from_utf8_lossy(&out.stdout), rig)
    }

    fn parse(name: &str, summary: &str, rig: super::RigLock) -> Sut {
        let kv: HashMap<&str, &str> = summary.lines().filter_map(|l| l.split_once('=')).collect();
        let get = |k: &str| -> String {
            kv.get(k)
                .unwrap_or_else(|| panic!("sut.sh summary lacks {k}:\n{summary}"))
                .to_string()
        };
        Sut {
            addr: get("ADDR"),
            ssh_port: get("SSH_PORT").parse().unwrap(),
            ssh_port_nofwd: get("SSH_PORT_NOFWD").parse().unwrap(),
            ssh_port_nosftp: get("SSH_PORT_NOSFTP").parse().unwrap(),
            key: get("KEY").into(),
            wrong_key: get("WRONG_KEY").into(),
            known_hosts: get("KNOWN_HOSTS").into(),
            docker_sock: get("DOCKER_SOCK"),
            dir: get("DIR").into(),
            name: name.to_string(),
            _rig: rig,
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// `docker -H unix://SOCK ARGS` against the SUT's engine.
    pub fn docker(&self, args: &[&str]) -> Output {
        Command::new("docker")
            .arg("-H")
            .arg(format!("unix://{}", self.docker_sock))
            .args(args)
            .output()
            .expect("run docker")
    }

    /// The SUT as an exectl target, through the sshd that allows forwarding.
    pub fn target_url(&self) -> String {
        format!("ssh://root@{}:{}", self.addr, self.ssh_port)
    }

    /// `ssh` to the SUT with `key` on `port`, host key checked against `known_hosts`; runs `command`.
    pub fn ssh(&self, key: &std::path::Path, port: u16, command: &str) -> Output {
        Command::new("ssh")
            .arg("-i")
            .arg(key)
            .arg("-o")
            .arg(format!("UserKnownHostsFile={}", self.known_hosts.display()))
            .args([
                "-o",
                "StrictHostKeyChecking=yes",
                "-o",
                "BatchMode=yes",
                "-o",
                "IdentitiesOnly=yes",
                "-o",
                "ConnectTimeout=5",
                "-p",
                &port.to_string(),
                &format!("root@{}", self.addr),
                command,
            ])
            .output()
            .expect("run ssh")
    }
}

impl Drop for Sut {
    fn drop(&mut self) {
        super::rig_down(SCRIPT, &self.name);
    }
}
