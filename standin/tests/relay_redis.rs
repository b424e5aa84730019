//! Two instances sharing one PostgreSQL and one Redis: frames cross instances within a room only, in the
//! app's envelope on `exe:yjs:<docName>`.

mod common;

use std::time::Duration;

use base64::Engine as _;
use common::*;
use futures_util::{SinkExt, StreamExt};
use serde_json::Value;
use tokio_tungstenite::tungstenite::Message;

const OWNER: &str = "owner@exelearning.net";
const PW: &str = "Bench1234!";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL and Redis at EXE_TEST_PG_URL, EXE_TEST_REDIS_URL (scripts/services.sh); bash scripts/test.sh runs it"]
async fn two_instances_relay_through_redis() {
    let mut db = TestDb::new(Dialect::Postgres).await;
    let redis = parse_url(&redis_url());
    let mut env = db.env();
    env.push(("REDIS_HOST".into(), redis.host.clone()));
    if !redis.port.is_empty() {
        env.push(("REDIS_PORT".into(), redis.port.clone()));
    }
    env.push(("STANDIN_ROOM_CLEANUP_MS".into(), "200".into()));
    let mut a = Server::start(&env).await;
    let mut b = Server::start(&env).await;
    for s in [&a, &b] {
        assert!(
            s.log_text()
                .contains("[Redis] Pub/sub clients connected successfully"),
            "{}",
            s.log_text()
        );
    }
    db.seed_user(OWNER, &hash(PW, "$2b$", 4), r#"["ROLE_USER"]"#)
        .await;
    let x = db.seed_project(OWNER, "active", "private").await;
    let y = db.seed_project(OWNER, "active", "private").await;
    let (token, _) = login(&a, OWNER, PW).await;
    let doc_x = format!("project-{x}");
    let doc_y = format!("project-{y}");

    // Watch the channel as a third party, to check the envelope.
    let client = redis::Client::open(redis_url()).unwrap();
    let mut watcher = client.get_async_pubsub().await.expect("Redis is reachable");
    watcher.subscribe(format!("exe:yjs:{doc_x}")).await.unwrap();

    let mut a1 = ws_connect(&a, &doc_x, Some(&token)).await;
    let mut a2 = ws_connect(&a, &doc_x, Some(&token)).await;
    let mut b1 = ws_connect(&b, &doc_x, Some(&token)).await;
    let mut b2 = ws_connect(&b, &doc_y, Some(&token)).await;
    eventually(
        Duration::from_secs(5),
        "all four sockets joined",
        || async { ws_counts(&a, None).await.0 == 2 && ws_counts(&b, None).await.0 == 2 },
    )
    .await;

    // B subscribes as its first client joins; retry until the first frame crosses (bounded).
    let mut crossed = false;
    for i in 0..50u8 {
        send_binary(&mut a1, &[0, 0xEE, i]).await;
        if next_binary(&mut b1, Duration::from_millis(100))
            .await
            .is_some()
        {
            crossed = true;
            break;
        }
    }
    assert!(crossed, "no frame crossed from A to B");

    let frame: Vec<u8> = (0..200u32).map(|i| (i * 7 + 1) as u8).collect();
    send_binary(&mut a1, &frame).await;
    let deadline = std::time::Instant::now() + Duration::from_secs(3);
    loop {
        let got = next_binary(&mut b1, Duration::from_secs(3))
            .await
            .expect("frame on B");
        if got == frame {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "frame never reached B"
        );
    }
    // Local members get it too, the sender does not, and the other room does not.
    let mut local = None;
    for _ in 0..60 {
        match next_binary(&mut a2, Duration::from_secs(2)).await {
            Some(g) if g == frame => {
                local = Some(g);
                break;
            }
            Some(_) => continue,
            None => break,
        }
    }
    assert!(local.is_some(), "local member missed the frame");
    assert_eq!(next_binary(&mut b2, Duration::from_millis(500)).await, None);
    assert_eq!(
        next_binary(&mut a1, Duration::from_millis(300)).await,
        None,
        "no echo"
    );

    // The envelope on Redis, as the app writes it.
    let mut stream = watcher.on_message();
    let envelope = loop {
        let msg = tokio::time::timeout(Duration::from_secs(3), stream.next())
            .await
            .expect("envelope on the channel")
            .unwrap();
        let v: Value = serde_json::from_str(&msg.get_payload::<String>().unwrap()).unwrap();
        let payload = base64::engine::general_purpose::STANDARD
            .decode(v["payload"].as_str().unwrap())
            .unwrap();
        if payload == frame {
            break v;
        }
    };
    drop(stream);
    assert_eq!(envelope["docName"], doc_x.as_str());
    assert_eq!(envelope["messageType"], "yjs");
    assert_eq!(envelope["projectUuid"], x.as_str());
    assert!(envelope["instanceId"]
        .as_str()
        .is_some_and(|s| !s.is_empty()));
    assert!(envelope["timestamp"].as_i64().is_some());

    // An asset message (text JSON of a known type) crosses as text; other text is ignored.
    let asset = r#"{"type":"awareness-update","data":{"user":"a1"}}"#;
    a1.send(Message::Text(r#"{"type":"chat","x":1}"#.into()))
        .await
        .unwrap();
    a1.send(Message::Text(asset.into())).await.unwrap();
    let got = next_text_of_type(&mut b1, "awareness-update", Duration::from_secs(3)).await;
    assert_eq!(got.unwrap()["data"]["user"], "a1");
    assert!(
        next_text_of_type(&mut b1, "chat", Duration::from_millis(300))
            .await
            .is_none()
    );

    // A frame another instance (here: this test) publishes reaches A's and B's local members of the room.
    let foreign = serde_json::json!({
        "instanceId": "some-other-instance", "timestamp": 1, "docName": doc_x,
        "messageType": "yjs",
        "payload": base64::engine::general_purpose::STANDARD.encode([2u8, 9, 9, 9]),
    });
    let mut publisher = client.get_multiplexed_async_connection().await.unwrap();
    let _: i64 = redis::cmd("PUBLISH")
        .arg(format!("exe:yjs:{doc_x}"))
        .arg(foreign.to_string())
        .query_async(&mut publisher)
        .await
        .unwrap();
    for ws in [&mut a1, &mut b1] {
        let mut seen = false;
        for _ in 0..60 {
            match next_binary(ws, Duration::from_secs(2)).await {
                Some(g) if g == [2, 9, 9, 9] => {
                    seen = true;
                    break;
                }
                Some(_) => continue,
                None => break,
            }
        }
        assert!(seen, "foreign frame not delivered");
    }

    for ws in [a1, a2, b1, b2] {
        close_ws(ws).await;
    }
    a.stop();
    b.stop();
    db.drop_db().await;
}
