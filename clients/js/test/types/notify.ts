// Notify: publish, subscribe with a pattern, read typed messages.
import { connect, type Message, type Subscription } from "fanout";

const client = await connect("127.0.0.1:7411", { reconnect: { initial: 50, maximum: 1000 }, timeout: 2000 });
const sub: Subscription = client.subscribe("news.*", ["alerts.>"]);
await sub.ready;
const receivers: number = await client.publish("news.uk", new TextEncoder().encode("hello"));
for await (const msg of sub) {
    const seen: Message = msg;
    const text: string = seen.text;
    const bytes: Uint8Array = seen.payload;
    console.log(receivers, seen.subject, seen.seq + 1, text, bytes.length);
    break;
}
const latest: Message[] = await client.last("news.uk", 5);
const next: Message = await sub.nextMessage(1000);
console.log(latest.length, next.seq);
await client.close();
