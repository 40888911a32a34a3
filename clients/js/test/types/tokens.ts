// A program that connects with a token function that asks the application's backend, and hears of refreshes.
import { connect, FanoutEvent, TokenError, TokenFunction } from "fanout";

const getToken: TokenFunction = async () => {
    const response = await fetch("/fanout-token");
    return response.text();
};

export async function main(): Promise<void> {
    try {
        const client = await connect("tls://fanout.example:7411", {
            token: getToken,
            tls: { ca: "-----BEGIN CERTIFICATE-----\n..." },
            onEvent: (event: FanoutEvent) => {
                if (event.kind === "token-failed" || event.kind === "auth-expired") console.warn(event.detail);
            },
        });
        const fixed = await connect("wss://fanout.example/ws", { token: "eyJ.e30.sig" });
        await Promise.all([client.close(), fixed.close()]);
    } catch (error) {
        if (error instanceof TokenError) console.error("no token:", error.cause);
        throw error;
    }
}
