import FanoutEventLoop

/// SIGHUP: the configuration is read again and applied to the running server without disconnecting anyone.
extension Lifecycle {
    /// Reads the configuration again and applies it. A configuration that cannot be read or is invalid is
    /// rejected whole; the running one stays.
    func reload() {
        let host = host
        guard let configurationLoader else {
            host.logger.warning("SIGHUP: this server was started without a configuration source; nothing to reload")
            return
        }
        notifier?.reloading()
        defer { announceReady() }
        let fresh: ServerConfiguration
        do {
            fresh = try configurationLoader()
        } catch {
            host.logger.error("reload failed, keeping the running configuration: \(error)")
            return
        }
        let problems = fresh.problems()
        guard problems.isEmpty else {
            host.logger.error("reload failed, keeping the running configuration: \(problems.joined(separator: "; "))")
            return
        }
        // Certificates are read again on every reload (they may have been renewed in place).
        var freshTLS: TLSContext?
        if !fresh.tls.listen.isEmpty || !fresh.mqtt.tlsListen.isEmpty || !host.listening.inheritedMQTTTLS.isEmpty {
            do {
                freshTLS = try host.makeTLSContext(fresh)
            } catch {
                host.logger.error("reload failed, keeping the running configuration: \(error)")
                return
            }
        }
        var freshHTTPS: TLSContext?
        if host.http.servesTLS(fresh) {
            do {
                freshHTTPS = try HTTPFront.makeTLSContext(fresh)
            } catch {
                host.logger.error("reload failed, keeping the running configuration: \(error)")
                return
            }
        }
        host.listening.tlsContext = freshTLS
        host.http.tlsContext = freshHTTPS
        apply(fresh)
        host.logger.notice("configuration reloaded")
    }

    /// Applies limits, timeouts, log level and listen addresses to the running server and its connections.
    func apply(_ fresh: ServerConfiguration) {
        let host = host
        let old = host.configuration
        host.configuration = fresh
        let oldAuth = host.auth.adopt(fresh.auth)
        host.logger.logLevel = fresh.logLevel
        host.localHistory.subjectLimit = fresh.limits.maxTrackedSubjects
        if fresh.history != old.history {
            host.localHistory.applyHistory(rules: fresh.history.rules, maxBytes: fresh.history.maxBytes)
            host.historyUpkeep.startExpiry()
            host.historyUpkeep.warnIfDiskChanged(from: old.history, to: fresh.history)
        }
        if fresh.cluster != old.cluster {
            host.logger.notice("cluster: the cluster section changed; restarting the engine")
            host.restartCluster()
        } else if fresh.history != old.history, !host.isStandalone {
            host.engine.applyHistory(rules: fresh.history.rules, maxBytes: fresh.history.maxBytes)
        }
        if fresh.limits.maxLine != old.limits.maxLine || fresh.timeouts != old.timeouts {
            for connection in host.connections.values {
                connection.framer.maxLine = fresh.limits.maxLine
                host.updateReadTimeout(of: connection)
            }
        }
        if host.listening.inherited.isEmpty && fresh.listeners.listen != old.listeners.listen {
            rebind(\.plain, to: fresh.listeners.listen, tls: false)
        }
        if fresh.tls.listen != old.tls.listen { rebind(\.tls, to: fresh.tls.listen, tls: true) }
        if host.listening.inheritedMQTT.isEmpty && fresh.mqtt.listen != old.mqtt.listen {
            rebind(\.mqtt, to: fresh.mqtt.listen, tls: false, mqtt: true)
        }
        if host.listening.inheritedMQTTTLS.isEmpty && fresh.mqtt.tlsListen != old.mqtt.tlsListen {
            rebind(\.mqttTLS, to: fresh.mqtt.tlsListen, tls: true, mqtt: true)
        }
        host.auth.apply(replacing: oldAuth)
        if fresh.presence != old.presence { host.presence.apply(fresh.presence) }
        host.http.apply(fresh, old: old)
        if fresh.limits.maxLine != old.limits.maxLine {
            for connection in host.connections.values {
                (connection.extras?.adapter as? WebSocketTransport)?.decoder.maxMessage = fresh.limits.maxLine + 2
            }
        }
    }

    /// Stops the listeners in `slot` whose address left `addresses` and binds the new ones; an address that
    /// cannot be bound is logged and left out, and the others serve on.
    private func rebind(_ slot: WritableKeyPath<ListenerSet, [String: Listener]>, to addresses: [String], tls: Bool,
                        mqtt: Bool = false) {
        let host = host
        let kind = mqtt ? " (\(Server.mqttKind(tls: tls)))" : tls ? " (tls)" : ""
        for (text, _) in host.listening[keyPath: slot] where !addresses.contains(text) {
            host.listening[keyPath: slot][text] = nil
            host.logger.notice("stopped listening on \(text)\(kind)")
        }
        for text in addresses where host.listening[keyPath: slot][text] == nil {
            do {
                host.listening[keyPath: slot][text] = try host.bind(text, tls: tls, mqtt: mqtt)
            } catch {
                host.logger.error("cannot listen on \(text): \(error)")
            }
        }
    }
}
