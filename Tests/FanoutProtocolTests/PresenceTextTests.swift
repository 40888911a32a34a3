import FanoutProtocol
import Testing

/// The presence words of the contract (1.3): what the server writes is what every client reads back.
@Suite("Presence text")
struct PresenceTextTests {
    @Test func aMemberIsWrittenAsTheContractSpellsItAndReadBack() {
        let member = PresenceMember(client: "7", user: "alice", sinceSeconds: 12, group: "workers")
        #expect(member.text == "id=7,user=alice,since_s=12,group=workers")
        #expect(PresenceMember(parsing: Substring(member.text)) == member)
        let anonymous = PresenceMember(client: "n1/3", user: nil, sinceSeconds: 0)
        #expect(anonymous.text == "id=n1/3,user=-,since_s=0")
        #expect(PresenceMember(parsing: Substring(anonymous.text)) == anonymous)
    }

    @Test func aUserNameCannotBreakTheWordsFields() {
        let member = PresenceMember(client: "1", user: "a b,c=d\r", sinceSeconds: 1)
        #expect(member.text == "id=1,user=a_b_c_d_,since_s=1")
    }

    @Test func joinsAndLeavesAreThePayloadsOfTheContract() {
        let member = PresenceMember(client: "9", user: nil, sinceSeconds: 4)
        let leave = PresenceEvent(leave: member, reason: .slowConsumer)
        #expect(PresenceEvent(join: member).payload == "join id=9,user=-,since_s=4")
        #expect(leave.payload == "leave id=9,user=-,since_s=4,reason=slow-consumer")
        #expect(PresenceEvent(parsing: Substring(leave.payload)) == leave)
        #expect(PresenceEvent(parsing: "join id=9,user=-,since_s=4") == PresenceEvent(join: member))
        for bad in ["", "join", "hello id=1,user=-,since_s=0", "leave id=1,user=-,since_s=0",
                    "join id=1,user=-", "join id=,user=-,since_s=0", "leave id=1,user=-,since_s=0,reason="] {
            #expect(PresenceEvent(parsing: Substring(bad)) == nil, "\(bad) is not an event")
        }
    }

    @Test func onlyPresenceSubjectsAreRecognisedAsSuch() {
        #expect(PresenceText.eventSubject(for: "chat.room1") == "$presence.chat.room1")
        #expect(PresenceText.memberSubject(of: "$presence.chat.room1") == "chat.room1")
        #expect(PresenceText.memberSubject(of: "$presence.") == nil)
        #expect(PresenceText.memberSubject(of: "chat") == nil)
        #expect(PresenceText.longestSubject == 245)
        for (subject, expected) in [("$presence.a", true), ("$presence.", false), ("$presencex.a", false),
                                    ("presence.a", false), ("$p", false)] {
            let bytes = Array(subject.utf8)
            #expect(bytes.withUnsafeBytes { PresenceText.isEventSubject($0) } == expected, "\(subject)")
        }
    }
}
