import Foundation
import Testing

/// Headless Chromium and its WebDriver, as Debian installs them (./dev deps).
private let chromiumInstalled = ["/usr/bin/chromium", "/usr/bin/chromedriver"].allSatisfy {
    FileManager.default.isExecutableFile(atPath: $0)
}

@Suite("KICK from the console (1.3)", .threadPerTest, .timeLimit(.minutes(3)))
struct KickConsoleTests {
    /// The console of an administrator kicks a client from its row (the connection gets the farewell and is
    /// closed); its members view asks WHO and draws joins and leaves with a kick button each; a console that
    /// may not KICK shows none (console_kick_checks.py).
    @Test(.enabled(if: chromiumInstalled, "chromium and chromium-driver are not installed (./dev deps installs them)"))
    func consoleKicksAndShowsMembers() throws {
        let daemon = try Daemon(arguments: ["--http-listen", "127.0.0.1:0", "--config", try fixture("auth.yaml")])
        let victim = try LineClient(port: daemon.port)
        #expect(try victim.readLine().contains(" auth=required "))
        #expect(try victim.command("AUTH sensor-secret-token") == "+OK")
        let page = "http://127.0.0.1:\(try daemon.httpPort())/"
        let browser = try ExternalProgram("python3", [try fixture("console_kick_checks.py"), page,
                                                      "reader-secret-token", "sensor-secret-token", "sensors"],
                                          interactive: true)
        _ = try browser.stdout.waitForLine(containing: "STEP kicked", timeout: 60)
        #expect(try victim.readUntilClosed() == ["-ERR kicked by an administrator"])
        try browser.sendLine("go")
        let run = browser.finish(timeout: 90)
        #expect(run.status == 0 && run.stdout.contains("ok console-kick"),
                "\((run.stdout + run.stderr).joined(separator: "\n"))")
    }
}
