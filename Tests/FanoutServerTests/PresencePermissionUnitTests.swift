@testable import FanoutServer
import Testing

/// `$presence.<rest>` (1.3) is read with the rights on `<rest>`: to subscribe, and to be delivered through a
/// wildcard that overlaps a denied subject.
@Suite("Presence permissions")
struct PresencePermissionUnitTests {
    let reader = Permissions(subscribe: ["chat.>", "news"], subscribeDeny: ["chat.secret"])

    @Test func subscribingToJoinsAndLeavesNeedsRightsOnTheSubject() {
        #expect(reader.maySubscribe("$presence.chat.room1"))
        #expect(reader.maySubscribe("$presence.chat.>"))
        #expect(reader.maySubscribe("$presence.news"))
        #expect(!reader.maySubscribe("$presence.chat.secret"), "denied with the subject")
        #expect(!reader.maySubscribe("$presence.sports"))
        #expect(!reader.maySubscribe("$presence.>"), "needs rights on >")
        #expect(Permissions(subscribe: [">"]).maySubscribe("$presence.>"))
        #expect(!Permissions(subscribe: ["$presence.chat.x"]).maySubscribe("$presence.chat.x"),
                "a grant naming $presence. subjects gives nothing by itself")
        #expect(!reader.maySubscribe("$presencex.chat.room1"), "only the prefix with its dot is presence")
    }

    @Test func aDeniedSubjectsJoinsAndLeavesAreWithheld() {
        let wide = Permissions(subscribe: [">"], subscribeDeny: ["chat.secret", "ops.>"])
        #expect(wide.withholds("$presence.chat.secret"))
        #expect(wide.withholds("$presence.ops.db"))
        #expect(!wide.withholds("$presence.chat.open"))
        #expect(!wide.withholds("$presence."), "no subject after the prefix")
        #expect(Permissions(subscribe: [">"], subscribeDeny: ["$presence.>"]).withholds("$presence.chat.open"))
    }
}
