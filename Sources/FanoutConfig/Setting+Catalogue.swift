extension Setting {
    /// Every top-level setting, in the order config/fanoutd.yaml presents them.
    public static let all: [Setting] = [
        Setting("listen", .texts, "[\"127.0.0.1:7411\"]", flag: "--listen",
                reload: "new addresses opened, removed ones closed (not with socket activation)",
                "addresses to listen on: HOST:PORT, [V6HOST]:PORT or unix:PATH; port 0 picks a free port"),
        Setting("server_name", .text, "the host name", reload: "greetings of new connections",
                "the name in the greeting line"),
        Setting("max_line", .wholeNumber, "65536", reload: "applied at once, to open connections too",
                "longest line in bytes (LF/CRLF excluded); longer ones get -ERR too-long"),
        Setting("max_connections", .wholeNumber, "10000",
                "connections served at once; one more gets -ERR limit and is closed (sockets still closing count)"),
        Setting("max_subscriptions", .wholeNumber, "10000",
                "subscriptions per connection; a SUB over it is refused whole with -ERR limit"),
        Setting("max_payload", .wholeNumber, "1048576",
                "longest BPUB payload in bytes (independent of max_line); a longer one gets -ERR too-long; "
                    + "at most max_pending_bytes - 512 (unset: lowered to that; set, an unset max_pending_bytes "
                    + "is raised to hold it)"),
        Setting("max_asks", .wholeNumber, "1000",
                "open questions (ASK) per connection; one more gets -ERR limit; at most half of "
                    + "max_open_questions (unset: lowered to that)"),
        Setting("max_ask_timeout", .wholeNumber, "60000", "the longest timeout an ASK may ask for, in milliseconds"),
        Setting("max_open_questions", .wholeNumber, "100000",
                "open questions on the whole server; one more ASK, or one from a connection holding as many as "
                    + "are left free (the fair share), gets -ERR limit"),
        Setting("max_pending_bytes", .wholeNumber, "33554432",
                "unsent output per connection before it is dropped as a slow consumer; unset, a quarter of a "
                    + "max_memory under 128 MiB"),
        Setting("send_buffer_bytes", .wholeNumber, "524288", reload: "sockets accepted after the reload",
                "SO_SNDBUF of client sockets (the kernel keeps twice this); 0 = kernel autotuning"),
        Setting("backpressure_bytes", .wholeNumber, "0",
                "subscriber backlog that pauses its publishers until it drains to half; 0 = off"),
        Setting("write_timeout", .seconds, "30",
                "seconds queued output may go without any of it written before a slow-consumer drop"),
        Setting("idle_timeout", .seconds, "0", "seconds without input before -ERR idle-timeout and close; 0 = off"),
        Setting("idle_unsubscribed_timeout", .seconds, "60",
                "the same for a connection that holds no subscription; 0 = off"),
        Setting("tls_handshake_timeout", .seconds, "10", "seconds a TLS connection may take to finish its handshake"),
        Setting("shutdown_grace", .seconds, "5",
                "the longest a closing connection may wait for a peer that does not read its last lines"),
        Setting("keepalive", .seconds, "60", reload: "sockets accepted after the reload",
                "TCP keepalive idle seconds on accepted sockets; 0 = off"),
        Setting("max_memory", .wholeNumber, "1073741824",
                "server-wide bound on queued output, the subject index, open questions and BPUB payloads being read; "
                    + "0 = off, else at least 4 x max_pending_bytes"),
        Setting("max_tracked_subjects", .wholeNumber, "1000000", "subjects whose sequence numbers are remembered"),
        Setting("history", .section, "none", reload: "applied at once: a shrunk rule trims, a removed one drops",
                "rules: which subjects keep how many messages for how long (docs/history.md)"),
        Setting("history_max_bytes", .wholeNumber, "268435456",
                "every retained message counted; over it, the oldest across all subjects go"),
        Setting("history_dir", .text, "off", reload: "needs a restart",
                "directory that keeps history across restarts (docs/history.md); off = memory only; not with cluster"),
        Setting("history_fsync", .text, "everysec", reload: "needs a restart",
                "when history on disk is synced: always (every write batch), everysec, or no (the kernel decides)"),
        Setting("cluster", .section, "none (standalone)",
                reload: "a changed section restarts the engine; connections and subscriptions stay",
                "Redis primaries shared with other nodes (docs/cluster.md)"),
        Setting("http_listen", .text, "off", flag: "--http-listen",
                reload: "opened, moved or closed (not with socket activation)",
                "HOST:PORT for HTTP: /metrics, /healthz, WebSocket, events, publish, the console"),
        Setting("metrics_listen", .text, "off", reload: "as http_listen", "the old name of http_listen"),
        Setting("https_listen", .text, "off", flag: "--https-listen",
                reload: "opened, moved or closed (not with socket activation); certificate re-read on every reload",
                "HOST:PORT serving what http_listen serves, over TLS with tls_cert and tls_key (no tls_client_ca)"),
        Setting("http_allowed_origins", .texts, "[]",
                "origins whose pages may open a WebSocket or read an event stream; empty = same host, \"*\" = any"),
        Setting("http_request_timeout", .seconds, "10", "seconds an HTTP client may take to send its request (then 408)"),
        Setting("log_level", .text, "info", flag: "--log-level",
                "trace, debug, info, notice, warning, error or critical"),
        Setting("tls_listen", .texts, "[]", "HOST:PORT addresses that speak TLS"),
        Setting("tls_cert", .text, "none", reload: "re-read on every reload", "PEM certificate chain for tls_listen"),
        Setting("tls_key", .text, "none", reload: "re-read on every reload", "PEM private key for tls_listen"),
        Setting("tls_client_ca", .text, "none", reload: "re-read on every reload",
                "require client certificates signed by this CA (mutual TLS)"),
        Setting("unix_socket_mode", .text, "\"0660\"", reload: "unix listeners opened after the reload",
                "file mode of unix: listeners"),
        Setting("max_connections_per_ip", .wholeNumber, "0", "connections one client address may hold; 0 = off"),
        Setting("users", .section, "none (auth=none)",
                reload: "applied at once; subscriptions no longer allowed are revoked",
                "users, token hashes and permissions (docs/security.md)"),
        Setting("auth_timeout", .seconds, "10", "seconds an unauthenticated connection may stay, from its connect"),
        Setting("max_auth_failures", .wholeNumber, "3", "failed AUTH attempts before the connection is closed"),
        Setting("max_unauthenticated", .wholeNumber, "1000", "connections that may wait to authenticate at once"),
        Setting("admin_commands", .texts, "[\"INFO\", \"CLIENTS\"]", "verbs that need a user with admin: true"),
    ]

    /// The keys of one `history:` rule.
    public static let historyRuleKeys = ["subjects", "max_messages", "max_age"]
    /// The keys of the `cluster:` section.
    public static let clusterKeys = ["redis", "redis_password_file", "idle_expiry", "max_in_flight", "heartbeat", "down_after"]
    /// The keys of one user under `users:`.
    public static let userKeys = ["token_hash", "token_hash_file", "publish", "publish_deny", "subscribe",
                                  "subscribe_deny", "admin"]
}
