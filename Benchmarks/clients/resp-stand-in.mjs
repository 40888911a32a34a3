// The smallest RESP client that can publish pipelined and receive pub/sub messages on redis-server, on a raw
// `net` socket: the stand-in for ioredis in bench_node.mjs, since ioredis could not be installed here. It
// parses only what these two uses need (integer replies, and counts `message` pushes by their prefix).
import net from "node:net";

export class RespClient {
    static connect(port) {
        return new Promise((resolve, reject) => {
            const socket = net.createConnection({ host: "127.0.0.1", port }, () => resolve(new RespClient(socket)));
            socket.on("error", reject);
        });
    }

    constructor(socket) {
        this.socket = socket;
        socket.setNoDelay(true);
        this.waiting = [];
        this.head = 0;
        this.rest = "";
        this.corked = false;
        socket.setEncoding("latin1");
        socket.on("data", (text) => this.onData(text));
    }

    publish(channel, message) {
        if (!this.corked) {
            this.corked = true;
            this.socket.cork();
            queueMicrotask(() => {
                this.corked = false;
                this.socket.uncork();
            });
        }
        this.socket.write(`*3\r\n$7\r\nPUBLISH\r\n$${channel.length}\r\n${channel}\r\n$${message.length}\r\n${message}\r\n`);
        return new Promise((resolve) => this.waiting.push(resolve));
    }

    onData(text) {
        if (this.onPush) {
            this.onPush(text);
            return;
        }
        const lines = (this.rest + text).split("\r\n");
        this.rest = lines.pop();
        for (const line of lines) if (line.startsWith(":")) this.waiting[this.head++](Number(line.slice(1)));
        if (this.head > 4096) {
            this.waiting = this.waiting.slice(this.head);
            this.head = 0;
        }
    }

    /** Resolves once `count` messages came on `channel`; `first()` is called at the first one. */
    subscribe(channel, count, first) {
        const marker = `$7\r\nmessage\r\n`;
        let seen = 0;
        let carry = "";
        let confirmed;
        this.subscribed = new Promise((resolve) => (confirmed = resolve));
        return new Promise((resolve) => {
            this.onPush = (text) => {
                const chunk = carry + text;
                let index = chunk.indexOf(marker);
                let last = 0;
                while (index >= 0) {
                    if (seen++ === 0) first();
                    last = index + marker.length;
                    index = chunk.indexOf(marker, last);
                }
                if (chunk.includes("subscribe")) confirmed();
                carry = chunk.slice(Math.max(last, chunk.length - marker.length));
                if (seen >= count) resolve();
            };
            this.socket.write(`*2\r\n$9\r\nSUBSCRIBE\r\n$${channel.length}\r\n${channel}\r\n`);
        });
    }

    close() {
        this.socket.destroy();
    }
}
