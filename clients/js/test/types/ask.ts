// Ask: a responder answers, an asker gathers typed answers.
import { connect, type Answer, type AskResult, type Question, type Responder } from "fanout";

const server = await connect("ws://127.0.0.1:7412/ws");
const responder: Responder = server.respond("time.now", async (question: Question) => {
    return question.text === "bytes" ? new Uint8Array([1, 2, 3]) : new Date().toISOString();
}, { group: "clocks" });
await responder.ready;
const client = await connect("127.0.0.1:7411");
const result: AskResult = await client.ask("time.now", "utc", {
    timeout: 500,
    max: 1,
    onAnswer: (answer) => console.log(answer.responder, answer.text),
});
const answers: Answer[] = result.answers;
console.log(result.id, result.asked, result.answered, result.gone, answers.map((a) => a.payload.length));
await responder.stop();
await Promise.all([server.close(), client.close()]);
