import FanoutEventLoop

extension Server {
    /// SIGHUP: reads the configuration again and applies it without disconnecting anyone. A configuration
    /// that cannot be read or is invalid is rejected whole; the running one stays.
    func reload() {
        guard let configurationLoader else {
            logger.warning("SIGHUP: this server was started without a configuration source; nothing to reload")
            return
        }
        notifier?.reloading()
        defer { notifier?.ready(status: statusLine(rate: 0)) }
        let fresh: ServerConfiguration
        do {
            fresh = try configurationLoader()
        } catch {
            logger.error("reload failed, keeping the running configuration: \(error)")
            return
        }
        let problems = fresh.problems()
        guard problems.isEmpty else {
            logger.error("reload failed, keeping the running configuration: \(problems.joined(separator: "; "))")
            return
        }
        // Certificates are read again on every reload (they may have been renewed in place).
        var freshTLS: TLSContext?
        if !fresh.tls.listen.isEmpty {
            do {
                freshTLS = try makeTLSContext(fresh)
            } catch {
                logger.error("reload failed, keeping the running configuration: \(error)")
                return
            }
        }
        listening.tlsContext = freshTLS
        apply(fresh)
        logger.notice("configuration reloaded")
    }

    /// Applies limits, timeouts, log level and listen addresses to the running server and its connections.
    func apply(_ fresh: ServerConfiguration) {
        let old = configuration
        configuration = fresh
        logger.logLevel = fresh.logLevel
        local.subjectLimit = fresh.limits.maxTrackedSubjects
        if fresh.history != old.history {
            local.applyHistory(rules: fresh.history.rules, maxBytes: fresh.history.maxBytes)
            startHistoryExpiry()
            warnIfHistoryDiskChanged(from: old.history, to: fresh.history)
        }
        if fresh.cluster != old.cluster {
            logger.notice("cluster: the cluster section changed; restarting the engine")
            restartCluster()
        } else if fresh.history != old.history, engine !== local {
            engine.applyHistory(rules: fresh.history.rules, maxBytes: fresh.history.maxBytes)
        }
        if fresh.limits.maxLine != old.limits.maxLine || fresh.timeouts != old.timeouts {
            for connection in connections.values {
                connection.framer.maxLine = fresh.limits.maxLine
                updateReadTimeout(of: connection)
            }
        }
        if listening.inherited.isEmpty && fresh.listeners.listen != old.listeners.listen {
            for (text, _) in listening.plain where !fresh.listeners.listen.contains(text) {
                listening.plain[text] = nil
                logger.notice("stopped listening on \(text)")
            }
            for text in fresh.listeners.listen where listening.plain[text] == nil {
                do {
                    listening.plain[text] = try bind(text)
                } catch {
                    logger.error("cannot listen on \(text): \(error)")
                }
            }
        }
        if fresh.tls.listen != old.tls.listen {
            for (text, _) in listening.tls where !fresh.tls.listen.contains(text) {
                listening.tls[text] = nil
                logger.notice("stopped listening on \(text) (tls)")
            }
            for text in fresh.tls.listen where listening.tls[text] == nil {
                do {
                    listening.tls[text] = try bind(text, tls: true)
                } catch {
                    logger.error("cannot listen on \(text): \(error)")
                }
            }
        }
        auth.apply(fresh.auth)
        http.apply(fresh, old: old)
        if fresh.limits.maxLine != old.limits.maxLine {
            for connection in connections.values {
                (connection.extras?.adapter as? WebSocketTransport)?.decoder.maxMessage = fresh.limits.maxLine + 2
            }
        }
    }
}
