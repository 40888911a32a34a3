import FanoutClient
import Testing

/// The word checks agree with the server's grammar: a subject for PUB has no wildcard, a pattern may,
/// tokens (groups, question ids, epochs) are `[A-Za-z0-9_.-]{1,64}`, and an AUTH token is one visible word.
@Suite("CommandWords")
struct CommandWordsTests {
    private func refuses(_ check: () throws -> Void) -> Bool {
        do {
            try check()
            return false
        } catch {
            if case .invalid? = error as? ClientError { return true }
            return false
        }
    }

    @Test func subjectsForPublishAreConcrete() {
        for good in ["a", "news.uk", "a*.b>", String(repeating: "x", count: 255), "~!@#$%^&()"] {
            #expect(!refuses { try CommandWords.checkSubject(good) }, "\(good)")
        }
        for bad in ["", "a b", "a\tb", "a\nPUB b", "a\r", "a..b", ".a", "a.", "news.*", "logs.>", "*",
                    String(repeating: "x", count: 256), "caf\u{E9}"] {
            #expect(refuses { try CommandWords.checkSubject(bad) }, "\(bad.debugDescription)")
        }
    }

    @Test func patternsMayHoldWildcards() {
        for good in ["a", "news.*", "logs.>", "*.*", "a.*.>"] {
            #expect(!refuses { try CommandWords.checkPattern(good) }, "\(good)")
        }
        for bad in ["", "a b", "a.>.b", ">.a", "a..*", "a\n"] {
            #expect(refuses { try CommandWords.checkPattern(bad) }, "\(bad.debugDescription)")
        }
    }

    @Test func groupsQuestionIdsAndEpochsAreTokens() {
        let checks: [(String) throws -> Void] = [
            { try CommandWords.checkGroup($0) }, { try CommandWords.checkQuestionID($0) },
            { try CommandWords.checkEpoch($0) },
        ]
        for check in checks {
            for good in ["w", "workers-1", "q.17", "A_b", String(repeating: "t", count: 64)] {
                #expect(!refuses { try check(good) }, "\(good)")
            }
            for bad in ["", "a b", "a\nb", "a*", "a>", "a/b", String(repeating: "t", count: 65)] {
                #expect(refuses { try check(bad) }, "\(bad.debugDescription)")
            }
        }
    }

    @Test func authTokensAreOneVisibleWord() {
        for good in ["secret", "eyJhbGciOiJIUzI1NiJ9.e30.sig", "p@ss:w0rd!"] {
            #expect(!refuses { try CommandWords.checkAuthToken(good) }, "\(good)")
        }
        for bad in ["", "two words", "a\tb", "a\nPUB x y", "a\r", "a\u{7F}"] {
            #expect(refuses { try CommandWords.checkAuthToken(bad) }, "\(bad.debugDescription)")
        }
    }

    @Test func aRequestIsOneLine() {
        #expect(!refuses { try CommandWords.checkLine("CHANNELS news.*") })
        #expect(refuses { try CommandWords.checkLine("INFO\nPUB x y") })
        #expect(refuses { try CommandWords.checkLine("INFO\r") })
        // Sent as a line, BPUB would make the server take the next commands as its bytes.
        #expect(refuses { try CommandWords.checkLine("BPUB x 5") })
        #expect(refuses { try CommandWords.checkLine(" bpub x 5") })
        #expect(!refuses { try CommandWords.checkLine("PUB bpub 5") })
    }

    @Test func theReasonNamesTheWordOnOneLine() {
        do {
            try CommandWords.checkSubject("a\nPUB b")
            Issue.record("refused")
        } catch {
            #expect(error.description.hasPrefix("bad subject: 'a?PUB b'"), "\(error.description)")
        }
    }
}
