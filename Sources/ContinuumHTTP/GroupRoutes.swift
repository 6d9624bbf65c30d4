import ContinuumCore
import ContinuumNode
import ContinuumStore
import ContinuumSync
import Foundation
import Hummingbird

/// Groups: who is in them, invites, joins, requests to join, and moderation (hide, block); the routes tagged
/// `groups` in the OpenAPI document.
struct GroupRoutes: Sendable {
    let store: ContinuumStore
    /// The node's identity: its admin records are signed with it, and its invites name it.
    let identity: NodeIdentity
    /// Every write: groups, invites, approvals, denials, removals, hides and blocks.
    let actions: NodeActions
    /// The sync port's addresses, as `host:port`: where an invite says to dial.
    let listening: @Sendable () -> [String]
    /// Joins a group with an invite code; nil where the node does not sync.
    let join: (@Sendable (InviteCode) async throws -> GroupID)?
    /// Joins an open group announced on the LAN by its name; nil where the node does not sync.
    let joinOpen: (@Sendable (String) async throws -> GroupID)?
    /// The web UI's address a phone opens (``BrowserRoutes/pageURL(_:)``): an invite's QR code holds it with
    /// `#invite=CODE`.
    var pageURL: (@Sendable (Request) -> String)?

    /// Adds the group routes to `api` (the `/api` group).
    func register(on api: RouterGroup<BasicRequestContext>) {
        api.get("groups") { _, _ in try json(["groups": try await store.groups().map(GroupJSON.init)]) }
        api.post("groups") { request, context in try await createGroup(request, context: context) }
        api.get("groups/:group/members") { _, context in
            let group = try await resolveGroup(context)
            return try json(["members": try await store.members(of: group).map(MemberJSON.init)])
        }
        api.delete("groups/:group/members/:member") { _, context in try await revoke(context) }
        api.post("groups/:group/invites") { request, context in try await invite(request, context: context) }
        api.post("join") { request, context in try await joinGroup(request, context: context) }
        api.get("requests") { request, _ in
            let all = try flag(request.formQuery, "all")
            return try json(["requests": try await store.joinRequests(includingDenied: all).map(JoinRequestJSON.init)])
        }
        api.post("requests/:node/approve") { request, context in try await approve(request, context: context) }
        api.post("requests/:node/deny") { _, context in
            let request = try await joinRequest(context)
            try await actions.deny(request.node)
            return try json(DeniedJSON(node: request.node))
        }
        api.post("comments/:id/hide") { _, context in try await hide(context) }
        api.get("blocked") { _, _ in try json(["blocked": try await store.blockedAuthors().map(BlockedJSON.init)]) }
        api.put("authors/:author/block") { _, context in try await block(context, on: true) }
        api.delete("authors/:author/block") { _, context in try await block(context, on: false) }
    }

    struct GroupBody: Decodable {
        let name: String?
        let open: Bool?
    }

    func createGroup(_ request: Request, context: BasicRequestContext) async throws -> Response {
        let body = try await request.decodeJSON(as: GroupBody.self, context: context)
        guard let name = body.name, !TextRules.isBlank(name) else {
            throw APIError(.badRequest, "missing_name", "give the group a name, such as Family", field: "name")
        }
        let id: GroupID
        do {
            id = try await withInvalidText(field: "name") {
                try await actions.createGroup(name: name, open: body.open ?? false, by: identity)
            }
        } catch let error as GroupNameTaken {
            throw APIError(.conflict, "group_exists", error.message, field: "name")
        }
        guard let group = try await store.groups().first(where: { $0.id == id }) else {
            throw APIError(.internalServerError, "internal", "the group was made but cannot be read back")
        }
        return try json(GroupJSON(group), status: .created)
    }

    struct InviteBody: Decodable {
        let expiresMinutes: Int?
        let host: String?
    }

    /// A one-time invite to the group, with its QR code; the code names this node's sync port and its LAN address
    /// (or `host`).
    func invite(_ request: Request, context: BasicRequestContext) async throws -> Response {
        let group = try await resolveGroup(context)
        let body = try await request.decodeJSON(as: InviteBody.self, context: context)
        let minutes = body.expiresMinutes ?? 60
        guard (1...10_080).contains(minutes) else {
            throw APIError.badRequest("expiresMinutes must be 1 to 10080", field: "expiresMinutes")
        }
        if let host = body.host, IPv4Address(host) == nil {
            throw APIError.badRequest(
                "host must be an IPv4 address such as 192.168.1.20 (a code carries 4 bytes of address)",
                field: "host"
            )
        }
        let ticket = try await storeCall(noun: "group") {
            try await actions.invite(to: group, lifetime: .seconds(minutes * 60), by: identity)
        }
        let (listenHost, port) = Self.syncAddress(listening())
        // Where the joiner dials: the address asked for; else the one the sync port is bound to, when it is bound to
        // one IPv4 address; else this machine's LAN address.
        let host = body.host ?? listenHost ?? LANAddress.first() ?? "127.0.0.1"
        let code = ticket.code(of: identity, host: host, port: port)
        let name = try await store.groups().first { $0.id == group }?.name
        return try json(
            InviteJSON(
                code: code,
                group: group,
                groupName: name,
                expiresAt: ticket.expiresAt,
                url: (pageURL?(request) ?? "/") + "#invite=" + code.text
            ),
            status: .created
        )
    }

    struct JoinBody: Decodable { let code: String? }

    /// Joins a group with an invite code: this node dials the inviter and waits (up to 20 s) for its answer.
    func joinGroup(_ request: Request, context: BasicRequestContext) async throws -> Response {
        let body = try await request.decodeJSON(as: JoinBody.self, context: context)
        guard let text = body.code.map(InviteCode.pasted), !TextRules.isBlank(text) else {
            throw APIError(.badRequest, "missing_code", "paste the invite code another node made", field: "code")
        }
        guard let join, let joinOpen else {
            throw APIError(.serviceUnavailable, "no_sync", "this node does not sync, so it cannot join a group")
        }
        let code: InviteCode?
        do {
            code = try InviteCode(parsing: text)
        } catch {
            // Not a code: the name of an open group announced on the LAN, unless it looks like a mistyped code.
            guard !InviteCode.looksLikeCode(text) else {
                throw APIError(.badRequest, "bad_code", error.description, field: "code")
            }
            code = nil
        }
        do {
            let group: GroupID
            if let code { group = try await join(code) } else { group = try await joinOpen(text) }
            return try json(["group": group.hex])
        } catch let failure as JoinFailure {
            throw APIError(.conflict, "join_refused", failure.description, field: "code")
        }
    }

    struct ApproveBody: Decodable { let group: String? }

    func approve(_ request: Request, context: BasicRequestContext) async throws -> Response {
        let asked = try await joinRequest(context)
        let body = try await request.decodeJSON(as: ApproveBody.self, context: context)
        let group = try await storeCall(noun: "group", field: "group") {
            try await GroupChoice.resolve(
                body.group,
                in: store,
                adminOnly: body.group == nil,
                choosing: "the field group"
            )
        }
        let record = try await storeCall(noun: "request") {
            try await actions.approve(asked.node, into: group, by: identity)
        }
        return try json(ApprovedJSON(group: group, node: asked.node, record: record))
    }

    func revoke(_ context: BasicRequestContext) async throws -> Response {
        let group = try await resolveGroup(context)
        let text = try context.parameters.require("member").lowercased()
        let members = try await store.members(of: group).filter { $0.removedThrough == nil }
        let member: MemberSummary
        do {
            member = try IDLookup.resolve(text, among: members.map { IDCandidate($0, ids: [$0.log, $0.node]) })
        } catch {
            switch error {
            case .notAnID, .notFound:
                throw APIError(
                    .notFound,
                    "unknown_member",
                    "no member of this group has a log key or node id starting with '\(text)'"
                )
            case .ambiguous(_, let matches):
                throw APIError(
                    .conflict,
                    "ambiguous_prefix",
                    "'\(text)' matches \(matches.count) members; give more of the log key"
                )
            }
        }
        guard !member.isMe else { throw APIError.badRequest("this is this node; a node does not remove itself") }
        let record = try await storeCall(noun: "member") {
            try await actions.revoke(member.log, by: identity)
        }
        return try json(RevokedJSON(group: group, member: member, record: record))
    }

    func hide(_ context: BasicRequestContext) async throws -> Response {
        let text = try context.parameters.require("id")
        guard case .comment(let id, _) = try await resolveTarget(text, noun: "comment", in: store) else {
            throw APIError(.notFound, "unknown_comment", "no comment matches '\(text)'")
        }
        let record = try await storeCall(noun: "comment") { try await actions.hide(id, by: identity) }
        return try json(["hidden": id.hex, "record": record.hex])
    }

    func block(_ context: BasicRequestContext, on: Bool) async throws -> Response {
        let text = try context.parameters.require("author")
        let author: AuthorID = try await storeCall(noun: "author", field: "author") {
            try await store.resolveAuthor(text)
        }
        guard on else {
            try await store.unblock(author)
            return try json(BlockJSON(author: author, blocked: false))
        }
        let erased = try await storeCall(noun: "author") {
            try await actions.block(author, by: identity)
        }
        return try json(
            BlockJSON(author: author, blocked: true, erasedPosts: erased.posts, erasedComments: erased.comments)
        )
    }

    // MARK: Helpers

    /// The sync port, and the IPv4 address it is bound to unless that is every address (`0.0.0.0`), from the
    /// listening addresses as `host:port`.
    static func syncAddress(_ listening: [String]) -> (host: String?, port: Int) {
        guard let first = listening.first, let colon = first.lastIndex(of: ":"),
            let port = Int(first[first.index(after: colon)...])
        else { return (nil, 7420) }
        let host = String(first[..<colon])
        return (host != "0.0.0.0" && IPv4Address(host) != nil ? host : nil, port)
    }

    func resolveGroup(_ context: BasicRequestContext) async throws -> GroupID {
        // A name may hold spaces and any letter: percent-encoded in the path.
        let raw = try context.parameters.require("group")
        let text = raw.removingPercentEncoding ?? raw
        return try await storeCall(noun: "group") { try await GroupChoice.resolve(text, in: store) }
    }

    func joinRequest(_ context: BasicRequestContext) async throws -> JoinRequest {
        let text = try context.parameters.require("node").lowercased()
        let requests = try await store.joinRequests(includingDenied: true)
        do {
            return try IDLookup.resolve(text, among: requests.map { IDCandidate($0, ids: [$0.node]) })
        } catch {
            switch error {
            case .notAnID, .notFound:
                throw APIError(
                    .notFound,
                    "unknown_request",
                    "no request to join is from a node starting with '\(text)'"
                )
            case .ambiguous(_, let matches):
                throw APIError(
                    .conflict,
                    "ambiguous_prefix",
                    "'\(text)' matches \(matches.count) requests; give more of the node id"
                )
            }
        }
    }
}

extension GroupRoutes {
    /// The group routes over the parts of `services` they use.
    init(_ services: APIServices) {
        self.init(
            store: services.store,
            identity: services.identity,
            actions: services.actions,
            listening: services.listening,
            join: services.join,
            joinOpen: services.joinOpen
        )
    }
}

/// A dotted IPv4 address, checked.
struct IPv4Address {
    init?(_ text: String) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4, parts.allSatisfy({ UInt8($0) != nil }) else { return nil }
    }
}
