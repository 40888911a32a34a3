// The browser entry point has the same API over the page's WebSocket.
import { connect, type Client } from "fanout/browser";

const client: Client = await connect("wss://example.org/ws", { token: "t" });
const sub = client.subscribe("news.>");
for await (const msg of sub) console.log(msg.subject, msg.text);
