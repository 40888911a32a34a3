/// Commands that take several loop passes (a large SUB or UNSUB, a CHANNELS scan, a replay from an engine that
/// answers later) hold the connection's later commands back, so that replies keep their order, while every
/// other client is served in between.
extension Server {
    /// Stops executing `connection`'s commands until `releaseCommands`. False when it cannot be held (closed,
    /// or already held).
    func holdCommands(of connection: ClientConnection) -> Bool {
        connection.stopReading(.commandsHeld)
    }

    /// Goes on with `connection`'s commands, those already read first.
    func releaseCommands(of connection: ClientConnection) {
        connection.resumeReading(.commandsHeld)
    }
}
