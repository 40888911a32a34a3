import FanoutConfig
import Testing

@Suite("Unknown names are refused, with the nearest known one")
struct SettingNamesTests {
    @Test func aMisspeltSettingNamesItsLineAndTheNearestName() throws {
        let document = try YAMLReader.read("max_line: 5\n\nmax_conections: 5\n")
        #expect(throws: ConfigProblem(line: 3, "unknown setting 'max_conections'; did you mean max_connections?")) {
            try SettingNames.checkFile(document)
        }
    }

    @Test func theFirstUnknownByLineIsReported() throws {
        let document = try YAMLReader.read("zzz_later: 1\nlisten: a\nlog_levle: info\n")
        #expect(throws: ConfigProblem(line: 1, "unknown setting 'zzz_later'")) { try SettingNames.checkFile(document) }
    }

    @Test func everyCatalogueNameIsAccepted() throws {
        let text = Setting.all.map { "\($0.name): ~" }.joined(separator: "\n")
        try SettingNames.checkFile(try YAMLReader.read(text))
    }

    @Test func environmentVariablesMatchingNoSettingAreRefused() throws {
        try SettingNames.checkEnvironment(["PATH", "FANOUTD_MAX_LINE", "HOME"])
        #expect(throws: ConfigProblem(line: nil,
                "unknown environment variable 'FANOUTD_MAX_CONECTIONS'; did you mean FANOUTD_MAX_CONNECTIONS?")) {
            try SettingNames.checkEnvironment(["FANOUTD_MAX_LINE", "FANOUTD_MAX_CONECTIONS"])
        }
        #expect(throws: ConfigProblem(line: nil, "FANOUTD_USERS: the users section can only be set in the config file")) {
            try SettingNames.checkEnvironment(["FANOUTD_USERS"])
        }
    }

    @Test func nestedSectionsRefuseUnknownKeysUnderTheirPath() throws {
        let document = try YAMLReader.read("users:\n  alice:\n    token_hash: x\n    subscibe: [a]\n")
        guard case .mapping(let users)? = document.settings["users"], case .mapping(let alice)? = users["alice"] else {
            Issue.record("users.alice is a map")
            return
        }
        #expect(throws: ConfigProblem(line: 4, "users.alice: unknown setting 'subscibe'; did you mean subscribe?")) {
            try SettingNames.checkSection(alice, path: "users.alice", known: Setting.userKeys, in: document)
        }
    }

    @Test(arguments: [
        ("max_conections", "max_connections"), ("MAX_LINE", "max_line"), ("log_levle", "log_level"),
        ("http_listn", "http_listen"), ("listen", "listen"), ("idle_timout", "idle_timeout"),
    ])
    func nearestNames(typed: String, meant: String) {
        #expect(NearestName.find(typed, among: Setting.all.map(\.name)) == meant)
    }

    @Test func nothingIsSuggestedWhenNothingIsClose() {
        #expect(NearestName.find("colour", among: Setting.all.map(\.name)) == nil)
    }
}
