import FanoutHTTP
import FanoutProtocol

extension Server {
    /// `GET /groups`: each group and the pattern it holds, with its live members, for the console's subjects
    /// table: `{"total":n,"groups":[{"pattern":..,"group":..,"members":n},...]}`, at most `listingLimit`.
    /// On a server with users it takes a token (`Authorization: Bearer`, or `?token=`) of a user who may list
    /// channels, as CHANNELS does.
    func groupsResponse(_ head: HTTPRequestHead, exchange: HTTPExchange) -> HTTPResponse {
        if configuration.auth.requiresAuth {
            switch httpGrant(token: Self.bearerToken(head) ?? head.queryValues("token").first, peerHost: exchange.peer.host) {
            case .failure(let refusal): return refusal.response
            case .success(let granted):
                if configuration.auth.adminCommands.contains("CHANNELS"), !granted.grant.permissions.admin {
                    return HTTPRefusal(status: 403, code: "denied", "listing groups needs an admin user").response
                }
            }
        }
        let listing = index.groupListing(limit: Admin.listingLimit)
        let entries = listing.sets.map { set in
            "{\"pattern\":\(JSONText.quoted(set.pattern)),\"group\":\(JSONText.quoted(set.group)),\"members\":\(set.members)}"
        }
        return .json(status: 200, "{\"total\":\(listing.total),\"groups\":[\(entries.joined(separator: ","))]}")
    }
}
