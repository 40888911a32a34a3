// What the client needs from a connection, whatever carries it: TCP and TLS in Node, a WebSocket in browsers.
export {};
