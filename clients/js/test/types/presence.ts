// Presence: a room's member list from WHO, kept current by the joins and leaves; an administrator's kick.
import { connect, Kicked, type FanoutEvent, type Member, type PresenceEvent, type Who } from "fanout";

const room = "chat.room1";
const members = new Map<string, Member>();
const client = await connect("127.0.0.1:7411", {
    onEvent(event: FanoutEvent) {
        if (event.kind === "kicked") console.log("kicked:", event.detail);
    },
});
const events = client.presence(room);
await events.ready;
const who: Who = await client.who(room, 1000);
for (const member of who.members) members.set(member.client, member);
for await (const event of events) {
    const change: PresenceEvent = event;
    if (change.kind === "join") members.set(change.member.client, change.member);
    else members.delete(change.member.client);
    const reason: string | null = change.reason;
    const user: string | null = change.member.user;
    console.log(change.seq, change.subject, reason, user, change.member.sinceSeconds, change.member.group, members.size);
    break;
}
try {
    const closed: number = await client.kick("user=alice", "spamming");
    console.log(closed);
} catch (error) {
    if (error instanceof Kicked) console.log(error.reason);
}
await client.close();
