//! The live and log rules on a public benchmark's queries: the Star Schema Benchmark
//! (its denormalized `lineorder_flat` form, 13 queries, and the customary `count(*)`) on
//! generated data, each query run 3 times on a real ClickHouse 26.9 server whose tables sit
//! on object storage (a local blob store behind a filesystem cache). Clean, no live or log
//! rule fires; with one problem planted at a time, exactly its rule fires, on the right
//! object, with the numbers this test measures with its own SQL.

mod support;

use std::path::Path;
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use serde_json::Value;

/// `default` (passwordless, for the test's own SQL), `auditor` (readonly=1, the audit) and
/// `bench` (the workload's user, with its own profile).
const USERS: &str = r#"<clickhouse>
    <profiles>
        <bench><enable_filesystem_cache_on_write_operations>1</enable_filesystem_cache_on_write_operations><!--planted--></bench>
        <default><enable_filesystem_cache_on_write_operations>1</enable_filesystem_cache_on_write_operations></default>
        <readonly>
            <readonly>1</readonly>
            <enable_filesystem_cache_on_write_operations>1</enable_filesystem_cache_on_write_operations>
        </readonly>
    </profiles>
    <users>
        <default>
            <password></password>
            <networks><ip>127.0.0.1</ip></networks>
            <profile>default</profile>
            <access_management>1</access_management>
        </default>
        <auditor>
            <password>audit-pw</password>
            <networks><ip>127.0.0.1</ip></networks>
            <profile>readonly</profile>
        </auditor>
        <bench>
            <password></password>
            <networks><ip>127.0.0.1</ip></networks>
            <profile>bench</profile>
        </bench>
    </users>
</clickhouse>
"#;

fn storage(dir: &Path) -> String {
    format!(
        r#"<clickhouse>
    <users_config>{users}</users_config>
    <max_concurrent_queries>100</max_concurrent_queries>
    <storage_configuration>
        <disks>
            <blob>
                <type>object_storage</type>
                <object_storage_type>local_blob_storage</object_storage_type>
                <metadata_type>local</metadata_type>
                <path>{blob}/</path>
            </blob>
            <blob_cache>
                <type>cache</type>
                <disk>blob</disk>
                <path>blob_cache</path>
                <max_size>1Gi</max_size>
                <cache_on_write_operations>1</cache_on_write_operations>
            </blob_cache>
        </disks>
        <policies>
            <cached><volumes><main><disk>blob_cache</disk></main></volumes></cached>
            <uncached><volumes><main><disk>blob</disk></main></volumes></uncached>
        </policies>
    </storage_configuration>
</clickhouse>
"#,
        users = dir.join("users.xml").display(),
        blob = dir.join("blob").display()
    )
}

/// A server with the benchmark's table on the cached policy, the given users file, and the
/// workload's user `bench` (with its profile `bench`).
fn start(users: &str) -> support::LiveServer {
    let server = support::LiveServer::start(|dir| {
        std::fs::write(dir.join("users.xml"), users).unwrap();
        std::fs::create_dir_all(dir.join("config.d")).unwrap();
        std::fs::write(dir.join("config.d/storage.xml"), storage(dir)).unwrap();
    });
    server.query("CREATE DATABASE ssb");
    create_lineorder(&server, "ssb.lineorder_flat", "cached");
    server
}

/// The clean server shared by the scenarios of this binary.
fn server() -> &'static support::LiveServer {
    static SERVER: OnceLock<support::LiveServer> = OnceLock::new();
    SERVER.get_or_init(|| start(USERS))
}

/// SSB's lineorder_flat on `policy`: 300,000 generated rows (25 nations in 5 regions,
/// 1992-1998), 3 parts.
fn create_lineorder(server: &support::LiveServer, table: &str, policy: &str) {
    create_lineorder_parts(server, table, policy, 3, "");
}

/// The same 300,000 rows in `parts` parts (merges stopped: the part count stays), with
/// `extra` (e.g. a projection) in the table's definition.
fn create_lineorder_parts(server: &support::LiveServer, table: &str, policy: &str, parts: u64, extra: &str) {
    server.query(&format!(
        "CREATE TABLE {table} (LO_ORDERKEY UInt32, LO_LINENUMBER UInt8, LO_ORDERDATE Date, LO_QUANTITY UInt8, \
         LO_EXTENDEDPRICE UInt32, LO_DISCOUNT UInt8, LO_REVENUE UInt32, LO_SUPPLYCOST UInt32, \
         C_CITY LowCardinality(String), C_NATION LowCardinality(String), C_REGION LowCardinality(String), \
         S_CITY LowCardinality(String), S_NATION LowCardinality(String), S_REGION LowCardinality(String), \
         P_MFGR LowCardinality(String), P_CATEGORY LowCardinality(String), P_BRAND LowCardinality(String){extra}) \
         ENGINE = MergeTree ORDER BY (LO_ORDERDATE, LO_ORDERKEY) SETTINGS storage_policy = '{policy}'"
    ));
    server.query(&format!("SYSTEM STOP MERGES {table}"));
    let rows = 300_000 / parts;
    for part in 0..parts {
        server.query(&format!(
            "INSERT INTO {table} WITH ['ALGERIA','ARGENTINA','BRAZIL','CANADA','UNITED STATES','CHINA','INDIA','JAPAN', \
             'VIETNAM','INDONESIA','FRANCE','GERMANY','RUSSIA','ROMANIA','UNITED KINGDOM','EGYPT','IRAN','IRAQ','JORDAN', \
             'SAUDI ARABIA','ETHIOPIA','KENYA','MOROCCO','MOZAMBIQUE','PERU'] AS nations, \
             ['AFRICA','AMERICA','ASIA','EUROPE','MIDDLE EAST'] AS regions \
             SELECT toUInt32(number), toUInt8(number % 7 + 1), toDate('1992-01-01') + toIntervalDay(number % 2557), \
             toUInt8(number % 50 + 1), toUInt32(cityHash64(number) % 10000000), toUInt8(number % 11), \
             toUInt32(cityHash64(number, 1) % 10000000), toUInt32(cityHash64(number, 2) % 100000), \
             concat(nations[c + 1], toString(number % 10)), nations[c + 1], regions[intDiv(c, 5) + 1], \
             concat(nations[s + 1], toString(number % 9)), nations[s + 1], regions[intDiv(s, 5) + 1], \
             concat('MFGR#', toString(m)), concat('MFGR#', toString(m), toString(number % 5 + 1)), \
             concat('MFGR#', toString(m), toString(number % 5 + 1), toString(number % 40 + 1)) \
             FROM (SELECT number, cityHash64(number, 3) % 25 AS c, cityHash64(number, 4) % 25 AS s, \
             cityHash64(number, 5) % 5 + 1 AS m FROM numbers({}, {rows}))",
            part * rows
        ));
    }
}

/// The Star Schema Benchmark's 13 queries on lineorder_flat, and `count(*)`.
fn ssb_queries(table: &str) -> Vec<String> {
    [
        "SELECT count(*) FROM T",
        "SELECT sum(LO_EXTENDEDPRICE * LO_DISCOUNT) AS revenue FROM T WHERE toYear(LO_ORDERDATE) = 1993 AND LO_DISCOUNT BETWEEN 1 AND 3 AND LO_QUANTITY < 25",
        "SELECT sum(LO_EXTENDEDPRICE * LO_DISCOUNT) AS revenue FROM T WHERE toYYYYMM(LO_ORDERDATE) = 199401 AND LO_DISCOUNT BETWEEN 4 AND 6 AND LO_QUANTITY BETWEEN 26 AND 35",
        "SELECT sum(LO_EXTENDEDPRICE * LO_DISCOUNT) AS revenue FROM T WHERE toISOWeek(LO_ORDERDATE) = 6 AND toYear(LO_ORDERDATE) = 1994 AND LO_DISCOUNT BETWEEN 5 AND 7 AND LO_QUANTITY BETWEEN 26 AND 35",
        "SELECT sum(LO_REVENUE), toYear(LO_ORDERDATE) AS year, P_BRAND FROM T WHERE P_CATEGORY = 'MFGR#12' AND S_REGION = 'AMERICA' GROUP BY year, P_BRAND ORDER BY year, P_BRAND",
        "SELECT sum(LO_REVENUE), toYear(LO_ORDERDATE) AS year, P_BRAND FROM T WHERE P_BRAND >= 'MFGR#2221' AND P_BRAND <= 'MFGR#2228' AND S_REGION = 'ASIA' GROUP BY year, P_BRAND ORDER BY year, P_BRAND",
        "SELECT sum(LO_REVENUE), toYear(LO_ORDERDATE) AS year, P_BRAND FROM T WHERE P_BRAND = 'MFGR#2239' AND S_REGION = 'EUROPE' GROUP BY year, P_BRAND ORDER BY year, P_BRAND",
        "SELECT C_NATION, S_NATION, toYear(LO_ORDERDATE) AS year, sum(LO_REVENUE) AS revenue FROM T WHERE C_REGION = 'ASIA' AND S_REGION = 'ASIA' AND year >= 1992 AND year <= 1997 GROUP BY C_NATION, S_NATION, year ORDER BY year ASC, revenue DESC",
        "SELECT C_CITY, S_CITY, toYear(LO_ORDERDATE) AS year, sum(LO_REVENUE) AS revenue FROM T WHERE C_NATION = 'UNITED STATES' AND S_NATION = 'UNITED STATES' AND year >= 1992 AND year <= 1997 GROUP BY C_CITY, S_CITY, year ORDER BY year ASC, revenue DESC",
        "SELECT C_CITY, S_CITY, toYear(LO_ORDERDATE) AS year, sum(LO_REVENUE) AS revenue FROM T WHERE (C_CITY = 'UNITED KINGDOM1' OR C_CITY = 'UNITED KINGDOM5') AND (S_CITY = 'UNITED KINGDOM1' OR S_CITY = 'UNITED KINGDOM5') AND year >= 1992 AND year <= 1997 GROUP BY C_CITY, S_CITY, year ORDER BY year ASC, revenue DESC",
        "SELECT C_CITY, S_CITY, toYear(LO_ORDERDATE) AS year, sum(LO_REVENUE) AS revenue FROM T WHERE (C_CITY = 'UNITED KINGDOM1' OR C_CITY = 'UNITED KINGDOM5') AND (S_CITY = 'UNITED KINGDOM1' OR S_CITY = 'UNITED KINGDOM5') AND toYYYYMM(LO_ORDERDATE) = 199712 GROUP BY C_CITY, S_CITY, year ORDER BY year ASC, revenue DESC",
        "SELECT toYear(LO_ORDERDATE) AS year, C_NATION, sum(LO_REVENUE - LO_SUPPLYCOST) AS profit FROM T WHERE C_REGION = 'AMERICA' AND S_REGION = 'AMERICA' AND (P_MFGR = 'MFGR#1' OR P_MFGR = 'MFGR#2') GROUP BY year, C_NATION ORDER BY year ASC, C_NATION ASC",
        "SELECT toYear(LO_ORDERDATE) AS year, S_NATION, P_CATEGORY, sum(LO_REVENUE - LO_SUPPLYCOST) AS profit FROM T WHERE C_REGION = 'AMERICA' AND S_REGION = 'AMERICA' AND (year = 1997 OR year = 1998) AND (P_MFGR = 'MFGR#1' OR P_MFGR = 'MFGR#2') GROUP BY year, S_NATION, P_CATEGORY ORDER BY year ASC, S_NATION ASC, P_CATEGORY ASC",
        "SELECT toYear(LO_ORDERDATE) AS year, S_CITY, P_BRAND, sum(LO_REVENUE - LO_SUPPLYCOST) AS profit FROM T WHERE S_NATION = 'UNITED STATES' AND (year = 1997 OR year = 1998) AND P_CATEGORY = 'MFGR#14' GROUP BY year, S_CITY, P_BRAND ORDER BY year ASC, S_CITY ASC, P_BRAND ASC",
    ]
    .iter()
    .map(|q| q.replace(" T", &format!(" {table}")))
    .collect()
}

/// Runs `sql` as the workload's user `bench` (its profile applies).
fn as_bench(server: &support::LiveServer, sql: &str) -> String {
    let out = std::process::Command::new("curl")
        .args(["-sS", "--fail-with-body", "--data-binary", sql])
        .arg(format!("http://127.0.0.1:{}/?user=bench", server.http_port))
        .output()
        .expect("run curl");
    assert!(out.status.success(), "bench query failed: {sql}\n{}", String::from_utf8_lossy(&out.stdout));
    String::from_utf8(out.stdout).unwrap()
}

/// One scenario at a time on the shared server: each audits only the query_log window of
/// its own workload, so scenarios must not overlap. A scenario on a server of its own
/// needs no turn.
struct Scenario<'s> {
    _turn: Option<MutexGuard<'static, ()>>,
    server: &'s support::LiveServer,
    started: Instant,
}

fn scenario() -> Scenario<'static> {
    static TURN: Mutex<()> = Mutex::new(());
    let turn = TURN.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let server = server();
    // the previous scenario's last query is at least 2 s older than this window's start
    std::thread::sleep(Duration::from_secs(2));
    Scenario { _turn: Some(turn), server, started: Instant::now() }
}

impl<'s> Scenario<'s> {
    fn on_own_server(server: &'s support::LiveServer) -> Scenario<'s> {
        Scenario { _turn: None, server, started: Instant::now() }
    }

    /// Runs the benchmark on `table` `times` times as `bench`.
    fn benchmark(&self, table: &str, times: usize) {
        for query in ssb_queries(table) {
            for _ in 0..times {
                as_bench(self.server, &query);
            }
        }
    }

    /// The readonly auditor's audit of this scenario's window (JSON report, stderr).
    fn audit(&self, extra: &[&str]) -> (Value, String) {
        self.server.query("SYSTEM FLUSH LOGS");
        let window = format!("{}s", self.started.elapsed().as_secs() + 1);
        let dsn = format!("http://auditor:audit-pw@127.0.0.1:{}", self.server.http_port);
        // the test machine's own state, true on every scenario and not the workload's: the
        // engine's start-up warnings (no delay accounting, ...), system logs without a TTL and
        // how full the machine's disk is
        let machine = "clickhouse-warnings,live-system-log-without-ttl,disk-space-low";
        let mut args = vec![
            "--dsn",
            &dsn,
            "--since",
            &window,
            "--format",
            "json",
            "--fail-on",
            "never",
            "--stats",
            "--ignore",
            machine,
        ];
        args.extend_from_slice(extra);
        let dir = tempfile::tempdir().unwrap();
        let (code, stdout, stderr) = support::chaudit(dir.path(), &args);
        assert_eq!(code, 0, "{stderr}");
        let report = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}\n{stderr}"));
        (report, stderr)
    }

    /// This window's query_log, measured by the test itself: one number from `select`
    /// over the bench user's finished queries whose text contains `needle`.
    fn measure(&self, select: &str, needle: &str) -> String {
        let needle = needle.replace('\\', "\\\\").replace('\'', "\\'");
        self.measure_where(select, &format!("position(query, '{needle}') > 0"))
    }

    /// The same over the runs of one shape (its normalized_query_hash, as findings name it).
    fn measure_shape(&self, select: &str, shape: &str) -> String {
        self.measure_where(select, &format!("toString(normalized_query_hash) = '{shape}'"))
    }

    fn measure_where(&self, select: &str, condition: &str) -> String {
        let window = self.started.elapsed().as_secs() + 1;
        self.server
            .query(&format!(
                "SELECT {select} FROM system.query_log WHERE type = 'QueryFinish' AND user = 'bench' \
                 AND event_time >= now() - INTERVAL {window} SECOND AND {condition}"
            ))
            .trim()
            .to_string()
    }
}

/// The rule ids of the findings, sorted.
fn fired(report: &Value) -> Vec<String> {
    let mut ids: Vec<String> =
        report["findings"].as_array().unwrap().iter().map(|f| f["rule_id"].as_str().unwrap().to_string()).collect();
    ids.sort();
    ids.dedup();
    ids
}

/// A JSON number or a number ClickHouse quoted (64-bit integers).
fn number(value: &Value) -> f64 {
    value.as_f64().or_else(|| value.as_str()?.parse().ok()).unwrap_or_else(|| panic!("not a number: {value}"))
}

#[test]
fn the_clean_benchmark_fires_no_live_or_log_rule() {
    let run = scenario();
    run.benchmark("ssb.lineorder_flat", 3);
    let (report, stderr) = run.audit(&[]);
    assert_eq!(fired(&report), Vec::<String>::new(), "{report}");
    // count(*) reads no column data: no bytes from the object store, so no cache miss
    assert_eq!(run.measure("sum(read_bytes) / count()", "count(*)"), "16");
    // the connect probe and the union; no shape needed a plan
    assert!(stderr.contains("2 round trips"), "{stderr}");
}

#[test]
fn a_policy_that_bypasses_the_cache_is_found_with_its_object_store_bytes() {
    let run = scenario();
    create_lineorder(server(), "ssb.lineorder_uncached", "uncached");
    run.benchmark("ssb.lineorder_uncached", 3);
    let (report, _) = run.audit(&[]);
    server().query("DROP TABLE ssb.lineorder_uncached SYNC");
    assert_eq!(fired(&report), ["repeat-queries-miss-the-cache"], "{report}");
    let misses = support::findings_of(&report, "repeat-queries-miss-the-cache");
    // the 13 queries that read columns; count(*) reads none
    assert_eq!(misses.len(), 13, "{misses:?}");
    // the node's reads over the window (metric_log), charted in the HTML report: the bytes it
    // fetched from object storage past the cache
    let node = &misses[0]["evidence"]["node_bytes_read"];
    let fetched = &node.as_array().expect("two series")[1];
    assert_eq!(fetched[0], "from object storage", "{node}");
    let fetched: f64 = fetched[1].as_object().expect("a series").values().map(number).sum();
    assert!(fetched > 0.0, "{node}");
    for miss in misses {
        assert_eq!(miss["evidence"]["tables"], serde_json::json!(["ssb.lineorder_uncached"]));
        let example = miss["evidence"]["example"].as_str().unwrap();
        let own = run.measure_shape(
            "sum(ProfileEvents['RemoteFSUnprefetchedBytes'] + ProfileEvents['RemoteFSPrefetchedBytes'])",
            miss["evidence"]["shape"].as_str().unwrap(),
        );
        assert_eq!(number(&miss["evidence"]["object_store_bytes"]), own.parse::<f64>().unwrap(), "{example}");
        assert!(own.parse::<f64>().unwrap() > 0.0);
    }
}

#[test]
fn a_page_size_over_the_lazy_limit_is_found_by_its_largest_limit() {
    let run = scenario();
    let table = "ssb.lineorder_flat";
    // one shape (normalized_query_hash ignores literals): the small page first
    for limit in [10, 20000, 20000] {
        as_bench(server(), &format!("SELECT * FROM {table} ORDER BY LO_REVENUE DESC LIMIT {limit} FORMAT Null"));
    }
    // what is no lazy-materialization candidate: an aggregation, EXPLAIN, a LIMIT in a string
    for _ in 0..2 {
        as_bench(
            server(),
            &format!(
                "SELECT C_NATION, sum(LO_REVENUE) AS r FROM {table} GROUP BY C_NATION ORDER BY r DESC LIMIT 20000 FORMAT Null"
            ),
        );
        as_bench(server(), &format!("EXPLAIN SELECT * FROM {table} ORDER BY LO_SUPPLYCOST LIMIT 20000 FORMAT Null"));
        as_bench(
            server(),
            &format!("SELECT * FROM {table} WHERE C_CITY != 'LIMIT 20000' ORDER BY LO_QUANTITY LIMIT 5 FORMAT Null"),
        );
    }
    let (report, stderr) = run.audit(&[]);
    let outcome = support::report_entry(&report, "outcomes", "top-n-over-lazy-materialization-limit");
    assert_eq!(fired(&report), ["top-n-over-lazy-materialization-limit"], "{outcome:?} {stderr}");
    let found = support::findings_of(&report, "top-n-over-lazy-materialization-limit");
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0]["evidence"]["limit"], 20000);
    assert!(found[0]["evidence"]["example"].as_str().unwrap().contains("LIMIT 20000"));
    let rows = run.measure("sum(read_rows)", "ORDER BY LO_REVENUE DESC LIMIT");
    assert_eq!(number(&found[0]["evidence"]["read_rows"]), rows.parse::<f64>().unwrap());
    // the plan round: one more round trip, the readonly auditor's EXPLAIN
    assert!(stderr.contains("3 round trips"), "{stderr}");
}

#[test]
fn a_projection_index_below_the_part_gate_is_found_on_its_table_and_shapes() {
    let run = scenario();
    let table = "ssb.lineorder_proj";
    create_lineorder_parts(
        server(),
        table,
        "cached",
        3,
        ", PROJECTION by_brand (SELECT _part_offset ORDER BY P_BRAND)",
    );
    run.benchmark(table, 3);
    // covered by the projection alone: it reads the projection as a normal one, gate or not
    let covered = format!("SELECT count() FROM {table} WHERE P_BRAND = 'MFGR#2239'");
    for _ in 0..3 {
        as_bench(server(), &covered);
    }
    let (report, _) = run.audit(&[]);
    let q23 = "P_BRAND = 'MFGR#2239' AND S_REGION";
    let gated_rows = run.measure("sum(read_rows) / count()", q23);
    let covered_rows = run.measure("sum(read_rows) / count()", "SELECT count() FROM ssb.lineorder_proj");
    // the index engages with the gate at 0: the finding is the gate, not the query
    let ungated = server().query(&format!(
        "SELECT sum(LO_REVENUE) FROM {table} WHERE P_BRAND = 'MFGR#2239' AND S_REGION = 'EUROPE' \
         SETTINGS min_table_rows_to_use_projection_index = 0, log_comment = 'ungated' FORMAT Null"
    ));
    server().query("SYSTEM FLUSH LOGS");
    let ungated_rows = server().query(
        "SELECT read_rows FROM system.query_log WHERE type = 'QueryFinish' AND log_comment = 'ungated' ORDER BY event_time DESC LIMIT 1",
    );
    let below_gate = server().query(&format!(
        "SELECT count() FROM system.parts WHERE active AND database || '.' || table = '{table}' AND rows < 1000000"
    ));
    server().query(&format!("DROP TABLE {table} SYNC"));
    assert!(ungated.is_empty());
    assert!(ungated_rows.trim().parse::<f64>().unwrap() < gated_rows.parse::<f64>().unwrap() / 4.0, "{ungated_rows}");
    assert_eq!(fired(&report), ["projection-index-parts-below-gate", "projection-not-used-full-scan"], "{report}");
    let gate = support::findings_of(&report, "projection-index-parts-below-gate");
    assert_eq!(gate.len(), 1);
    assert!(
        gate[0]["message"].as_str().unwrap().starts_with("ssb.lineorder_proj has a projection index"),
        "{}",
        gate[0]
    );
    assert_eq!(number(&gate[0]["evidence"]["parts_below_gate"]), below_gate.trim().parse::<f64>().unwrap());
    // the shapes that filter on the projection's key (SSB Q2.2, Q2.3), not the covered count()
    let unused = support::findings_of(&report, "projection-not-used-full-scan");
    let examples: Vec<&str> = unused.iter().map(|f| f["evidence"]["example"].as_str().unwrap()).collect();
    assert_eq!(unused.len(), 2, "{examples:?}");
    assert!(examples.iter().all(|e| e.contains("P_BRAND >= 'MFGR#2221'") || e.contains(q23)), "{examples:?}");
    let q23_finding = unused.iter().find(|f| f["evidence"]["example"].as_str().unwrap().contains(q23)).unwrap();
    assert_eq!(number(&q23_finding["evidence"]["rows_read_per_call"]), gated_rows.parse::<f64>().unwrap());
    assert_eq!(number(&q23_finding["evidence"]["table_rows"]), 300000.0);
    assert_eq!(q23_finding["evidence"]["projection"], "by_brand");
    assert!(covered_rows.parse::<f64>().unwrap() < 100000.0, "{covered_rows}");
}

#[test]
fn a_benchmark_profile_is_found_by_profile_and_user_not_only_the_auditors_session() {
    // its own server: a profile is a finding whatever the window. The workload's profile
    // turns the filesystem cache off, and the condition cache too, which this server does not
    // have (query_condition_cache_size = 0 on this engine): no finding for that one
    let planted =
        "<enable_filesystem_cache>0</enable_filesystem_cache><use_query_condition_cache>0</use_query_condition_cache>";
    let server = start(&USERS.replace("<!--planted-->", planted));
    let run = Scenario::on_own_server(&server);
    run.benchmark("ssb.lineorder_flat", 3);
    let (report, _) = run.audit(&[]);
    let ran = run.measure("count()", "lineorder_flat");
    let off = run.measure("countIf(Settings['enable_filesystem_cache'] = '0')", "lineorder_flat");
    let from_cache = run.measure("sum(ProfileEvents['CachedReadBufferReadFromCacheBytes'])", "lineorder_flat");
    assert_eq!(off, ran, "every workload query ran with the profile's setting");
    assert_eq!(from_cache, "0");
    let cache_size = server.query("SELECT value FROM system.server_settings WHERE name = 'query_condition_cache_size'");
    assert_eq!(cache_size.trim(), "0");
    // the cause, on the profile and its user, and its symptom, the repeats that missed the cache
    assert_eq!(fired(&report), ["live-filesystem-cache-disabled", "repeat-queries-miss-the-cache"], "{report}");
    let found = support::findings_of(&report, "live-filesystem-cache-disabled");
    assert_eq!(found.len(), 1, "{found:?}");
    let message = found[0]["message"].as_str().unwrap();
    assert!(message.starts_with("settings profile `bench` (user(s) bench): enable_filesystem_cache = 0"), "{message}");
    assert_eq!(found[0]["evidence"]["workload_queries"], serde_json::json!([format!("bench: {ran}")]));
    assert_eq!(found[0]["evidence"]["cache_disks"], serde_json::json!(["blob_cache"]));
}

/// Runs `sql` as `bench` from a client that says it is `agent` (an HTTP User-Agent).
fn as_bench_from(server: &support::LiveServer, agent: &str, sql: &str) -> String {
    let out = std::process::Command::new("curl")
        .args(["-sS", "--fail-with-body", "-A", agent, "--data-binary", sql])
        .arg(format!("http://127.0.0.1:{}/?user=bench", server.http_port))
        .output()
        .expect("run curl");
    assert!(out.status.success(), "bench query failed: {sql}\n{}", String::from_utf8_lossy(&out.stdout));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn a_lock_heavy_shape_is_found_by_its_share_not_inserts_or_tools_polling_system_tables() {
    let run = scenario();
    let scratch = "ssb.orders_scratch";
    as_bench(
        server(),
        &format!(
            "CREATE TABLE {scratch} (id UInt64, day Date, v UInt32) ENGINE = MergeTree PARTITION BY day ORDER BY id"
        ),
    );
    // the workload's ordinary reads
    run.benchmark("ssb.lineorder_flat", 1);
    // INSERT ... SELECT FROM numbers(): one part per call, and a heavy one spread over 50 partitions
    for _ in 0..5 {
        as_bench(server(), &format!("INSERT INTO {scratch} SELECT number, '2026-01-01', number FROM numbers(20000)"));
    }
    for _ in 0..6 {
        as_bench(
            server(),
            &format!(
                "INSERT INTO {scratch} SELECT number, toDate('2026-01-01') + number % 50, number FROM numbers(20000)"
            ),
        );
    }
    // a dashboard polling system tables, plain and as an overview of scalar subqueries
    let overview: Vec<String> = [
        "processes",
        "parts",
        "tables",
        "databases",
        "merges",
        "mutations",
        "replicas",
        "disks",
        "metrics",
        "events",
        "dictionaries",
        "clusters",
    ]
    .iter()
    .map(|t| format!("(SELECT count() FROM system.{t}) AS n_{t}"))
    .collect();
    let used: Vec<String> = overview.iter().map(|s| s.rsplit(' ').next().unwrap().to_string()).collect();
    let overview = format!("WITH {} SELECT {}", overview.join(", "), used.join(" + "));
    for _ in 0..10 {
        as_bench_from(server(), "Grafana/10.2.0", "SELECT count() FROM system.processes");
        as_bench_from(
            server(),
            "Grafana/10.2.0",
            "SELECT database, table, sum(rows) FROM system.parts WHERE active GROUP BY database, table",
        );
        as_bench_from(server(), "Grafana/10.2.0", &overview);
    }
    // a diagnostic tool reading system tables through merge(): known by its name only
    let diagnostics: Vec<String> = [
        "parts",
        "tables",
        "columns",
        "databases",
        "merges",
        "mutations",
        "disks",
        "metrics",
        "events",
        "settings",
        "functions",
        "formats",
        "users",
        "roles",
        "quotas",
        "settings_profiles",
    ]
    .iter()
    .map(|t| format!("(SELECT count() FROM merge('system', '^{t}$')) AS m_{t}"))
    .collect();
    let used: Vec<String> = diagnostics.iter().map(|s| s.rsplit(' ').next().unwrap().to_string()).collect();
    let diagnostics = format!("WITH {} SELECT {}", diagnostics.join(", "), used.join(" + "));
    for _ in 0..6 {
        as_bench_from(server(), "clickhouse-diagnostics/1.0", &diagnostics);
    }
    // a dashboard counter built from scalar subqueries over the benchmark's table
    let subqueries: Vec<String> = (0..40)
        .map(|i| format!("(SELECT count() FROM ssb.lineorder_flat WHERE LO_DISCOUNT = {}) AS d{i}", i % 11))
        .collect();
    let sum: Vec<String> = (0..40).map(|i| format!("d{i}")).collect();
    let widget = format!("WITH {} SELECT {}", subqueries.join(", "), sum.join(" + "));
    for _ in 0..6 {
        as_bench_from(server(), "Grafana/10.2.0", &widget);
    }
    let (report, _) = run.audit(&[]);
    let window = run.started.elapsed().as_secs() + 1;
    server().query(&format!("DROP TABLE {scratch} SYNC"));
    assert_eq!(fired(&report), ["context-lock-heavy-shapes"], "{report}");
    let found = support::findings_of(&report, "context-lock-heavy-shapes");
    assert_eq!(found.len(), 1, "{found:?}");
    let evidence = &found[0]["evidence"];
    assert!(
        evidence["example"].as_str().unwrap().starts_with("WITH (SELECT count() FROM ssb.lineorder_flat"),
        "{evidence}"
    );
    let locks: f64 = run.measure("round(avg(ProfileEvents['ContextLock']), 1)", "AS d39 SELECT").parse().unwrap();
    assert_eq!(number(&evidence["locks_per_call"]), locks);
    // what the others cost, measured: each would be heavy by its count and its share alone
    let per_call = |needle: &str| run.measure("avg(ProfileEvents['ContextLock'])", needle).parse::<f64>().unwrap();
    let spread = per_call("toDate('2026-01-01') + number % 50");
    let polled = per_call("AS n_clusters SELECT n_processes");
    let diagnosed = per_call("AS m_settings_profiles SELECT m_parts");
    let plain = per_call("SELECT number, '2026-01-01', number FROM numbers(20000)");
    // the workload's queries (all the bench user's), as the audit saw them
    let total: f64 = run.measure_where("sum(ProfileEvents['ContextLock'])", "1").parse().unwrap();
    let median: f64 = run.measure_where("quantileTiming(0.5)(ProfileEvents['ContextLock'])", "1").parse().unwrap();
    for (what, count, runs) in
        [("spread INSERT", spread, 6.0), ("overview", polled, 10.0), ("diagnostics", diagnosed, 6.0)]
    {
        assert!(
            count >= 400.0 && count >= 5.0 * median && runs * count >= 0.1 * total,
            "{what}: {count} of {total}, median {median}"
        );
    }
    assert!(
        plain < 5.0 * median,
        "a plain INSERT ... SELECT FROM numbers takes what a query takes: {plain}, median {median}"
    );
    // the window's total: the workload's, and at most the audit's flush of the logs besides
    let window_locks = number(&evidence["window_locks"]);
    assert!(window_locks >= total && window_locks <= total + 100.0, "{window_locks} vs {total}");
    assert_eq!(number(&evidence["median_query_locks"]), median);
    assert_eq!(number(&evidence["times_median_query"]), (locks / median).trunc());
    let share = number(&evidence["share_of_locks_percent"]);
    assert_eq!(share, (6.0 * locks * 1000.0 / window_locks).trunc() / 10.0);
    assert!(share >= 10.0, "{share}");
    assert_eq!(number(&evidence["assumed_lock_ceiling"]), 57000.0);
    assert_eq!(number(&evidence["capacity_calls_per_second"]), (57000.0 / locks).trunc());
    assert_eq!(number(&evidence["max_concurrent_queries"]), 100.0);
    assert_eq!(number(&evidence["saturation_latency_ms"]), (100.0 * locks / 57000.0 * 1000.0).trunc());
    let peak = server().query(&format!(
        "SELECT max(ProfileEvent_ContextLock) FROM system.metric_log WHERE event_time >= now() - INTERVAL {window} SECOND"
    ));
    assert_eq!(number(&evidence["peak_locks_per_second"]), peak.trim().parse::<f64>().unwrap());
    // the query's text at a word's end, and the message whole
    let message = found[0]["message"].as_str().unwrap();
    assert!(message.starts_with("`WITH (SELECT count() FROM ssb.lineorder_flat WHERE…` takes "), "{message}");
    assert!(message.contains(&format!("x the median query's {median}; its 6 runs took ")), "{message}");
    assert!(!message.contains("more bytes"), "{message}");
    // its score among findings of its severity: the share of the window's Context lock it took
    // (medium, confidence medium: 3 x 0.7 x the share of acquisitions or of lock wait, the larger)
    let score = number(&found[0]["score"]);
    assert!(score >= 2.1 * share / 100.0 - 0.01 && score <= 2.1, "{score} {share}");
}

#[test]
fn cold_reads_with_many_object_store_requests_are_reported_as_the_floor() {
    let run = scenario();
    let table = "ssb.lineorder_cold";
    // many small parts on object storage, each query run once: every read goes to the store
    create_lineorder_parts(server(), table, "uncached", 30, "");
    run.benchmark(table, 1);
    // this engine's object store answers in microseconds: seconds are out of reach, so the
    // time threshold is lowered; the request count is the rule's own
    let (report, _) = run.audit(&["--param", "cold_min_avg_ms=0"]);
    // no cache disk in this policy's read path: each remote-disk read is a request to the store
    let cold_reads = |shape: &str| {
        run.measure_shape(
            "round(avg(ProfileEvents['RemoteFSUnprefetchedReads'] + ProfileEvents['RemoteFSPrefetchedReads']), 1)",
            shape,
        )
    };
    server().query(&format!("DROP TABLE {table} SYNC"));
    assert_eq!(fired(&report), ["cold-queries-at-object-store-floor"], "{report}");
    let found = support::findings_of(&report, "cold-queries-at-object-store-floor");
    for finding in &found {
        let example = finding["evidence"]["example"].as_str().unwrap();
        assert!(example.contains(table), "{example}");
        let requests = number(&finding["evidence"]["requests_per_call"]);
        let shape = finding["evidence"]["shape"].as_str().unwrap();
        assert_eq!(requests, cold_reads(shape).parse::<f64>().unwrap(), "{example}");
        assert!(requests >= 100.0);
    }
    // the scans of most columns cross the threshold; count(*) reads none
    assert!(found.len() >= 5, "{found:?}");
    assert!(found.iter().all(|f| !f["evidence"]["example"].as_str().unwrap().contains("count(*)")));
}
