// Share: members of a group take turns; events report reconnects and resumes.
import { connect, type FanoutEvent, type ResumeReport } from "fanout";

const worker = await connect("127.0.0.1:7411", {
    onEvent(event: FanoutEvent) {
        const report: ResumeReport | undefined = event.report;
        if (event.kind === "resumed" && report) {
            console.log(report.subject, report.recovered, report.missed ?? "unknown");
        }
    },
    logger: { info: (line: string) => console.log(line), warn: (line: string) => console.warn(line) },
});
const jobs = worker.subscribe("jobs.*", { group: "workers" });
await jobs.ready;
let done = 0;
for await (const job of jobs) {
    console.log(job.subject, job.text);
    if (++done === 10) break;
}
await jobs.unsubscribe();
await worker.close();
