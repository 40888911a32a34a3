// Errors: each kind narrows by instanceof, with the server's code and text on ServerError.
import {
    BadSubject, CannotConnect, Closed, ConnectionLost, connect, Denied, FanoutError, Limit, ServerError, Syntax,
} from "fanout";

function explain(error: unknown): string {
    if (error instanceof BadSubject || error instanceof Syntax) return `refused before sending: ${error.text}`;
    if (error instanceof Denied || error instanceof Limit) return `${error.code}: ${error.text}`;
    if (error instanceof ServerError) return `server said ${error.code}`;
    if (error instanceof ConnectionLost || error instanceof CannotConnect) return error.message;
    if (error instanceof Closed) return "closed";
    if (error instanceof FanoutError) return error.name;
    throw error;
}

try {
    const client = await connect("127.0.0.1:7411", { token: "secret", reconnect: false });
    try {
        await client.publish("chat room", "x");
    } catch (error) {
        console.log(explain(error));
    }
    const info: Record<string, string | number> = await client.info();
    const pong: string = await client.ping("hi");
    const channels: string = await client.request("CHANNELS");
    console.log(info.version, pong, channels);
    await client.close();
} catch (error) {
    console.log(explain(error));
}
