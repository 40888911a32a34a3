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
        if !fresh.tlsListen.isEmpty {
            do {
                freshTLS = try makeTLSContext(fresh)
            } catch {
                logger.error("reload failed, keeping the running configuration: \(error)")
                return
            }
        }
        tlsContext = freshTLS
        apply(fresh)
        logger.notice("configuration reloaded")
    }

    /// Applies limits, timeouts, log level and listen addresses to the running server and its connections.
    func apply(_ fresh: ServerConfiguration) {
        let old = configuration
        configuration = fresh
        logger.logLevel = fresh.logLevel
        sequences.limit = fresh.maxTrackedSubjects
        if fresh.maxLine != old.maxLine || fresh.writeTimeout != old.writeTimeout || fresh.idleTimeout != old.idleTimeout {
            for connection in connections.values {
                connection.framer.maxLine = fresh.maxLine
                connection.socket?.setTimeouts(read: fresh.idleTimeout, write: fresh.writeTimeout)
            }
        }
        if inheritedListeners.isEmpty && fresh.listen != old.listen {
            for (text, _) in listeners where !fresh.listen.contains(text) {
                listeners[text] = nil
                logger.notice("stopped listening on \(text)")
            }
            for text in fresh.listen where listeners[text] == nil {
                do {
                    listeners[text] = try bind(text)
                } catch {
                    logger.error("cannot listen on \(text): \(error)")
                }
            }
        }
        if fresh.tlsListen != old.tlsListen {
            for (text, _) in tlsListeners where !fresh.tlsListen.contains(text) {
                tlsListeners[text] = nil
                logger.notice("stopped listening on \(text) (tls)")
            }
            for text in fresh.tlsListen where tlsListeners[text] == nil {
                do {
                    tlsListeners[text] = try bind(text, tls: true)
                } catch {
                    logger.error("cannot listen on \(text): \(error)")
                }
            }
        }
        anyUserWithholds = Self.withholds(fresh)
        if fresh.users != old.users { reapplyPermissions() }
        if fresh.metricsListen != old.metricsListen {
            metricsServer = nil
            do {
                try startMetrics()
            } catch {
                logger.error("cannot serve metrics on \(fresh.metricsListen ?? ""): \(error)")
            }
        }
    }
}
