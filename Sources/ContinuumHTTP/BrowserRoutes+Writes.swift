import ContinuumCore
import ContinuumNode
import ContinuumStore
import Foundation
import Hummingbird

/// What a linked browser reads of its own logs, and the writes it signs.
extension BrowserRoutes {
    struct GroupJSON: Encodable {
        let id: String
        let name: String?
        /// The browser's declared log in the group; nil until it declares one.
        let log: String?
    }

    struct MeJSON: Encodable {
        let device: String
        let account: String
        let name: String?
        let groups: [GroupJSON]
        /// Set for a guest: it sees and writes in `groups`' one group alone.
        var guest = false
    }

    /// `GET /api/browser/me`: the browser's device and account, the person's name, and the groups it can write in,
    /// each with the log it declared there (if any).
    func me(_ session: BrowserSession) async throws -> Response {
        if session.group != nil, let guest = try await store.guest(session.device) {
            let group = GroupJSON(id: guest.group.hex, name: guest.groupName, log: guest.log.hex)
            return try json(
                MeJSON(
                    device: guest.device.hex,
                    account: session.account.hex,
                    name: guest.name,
                    groups: [group],
                    guest: true
                )
            )
        }
        let declared = try await store.declaredLogs(of: session.device)
        let groups = try await store.groups().map { group in
            GroupJSON(id: group.id.hex, name: group.name, log: declared[group.id]?.hex)
        }
        return try json(
            MeJSON(
                device: session.device.hex,
                account: session.account.hex,
                name: try await store.accountName(of: identity),
                groups: groups
            )
        )
    }

    struct HeadJSON: Encodable {
        let author: String
        let sequence: UInt64
        let head: String?
    }

    /// `GET /api/browser/logs/{author}`: where one of the browser's logs stands (its device key's, or a log it
    /// declared), so that it signs the next record at the right place.
    func logHead(_ request: Request, context: BasicRequestContext) async throws -> Response {
        let session = try await session(request)
        let text = try context.parameters.require("author")
        guard let author = AuthorID(hex: text) else {
            throw APIError.badRequest("'\(text)' is not a log key: 64 hex digits", field: "author")
        }
        var declared = Array(try await store.declaredLogs(of: session.device).values)
        if session.group != nil, let guest = try await store.guest(session.device) { declared.append(guest.log) }
        guard author == session.device || declared.contains(author) else {
            throw APIError(.forbidden, "not_yours", "log \(author.short) is not one of this browser's")
        }
        let head = try await store.logHead(author)
        return try json(HeadJSON(author: author.hex, sequence: head.sequence, head: head.head?.hex))
    }

    struct ThumbnailJSON: Encodable {
        let sha256: String
        let bytes: UInt32
    }

    struct StagedJSON: Encodable {
        let sha256: String
        let bytes: UInt64
        /// The media type's code in records (PROTOCOL.md §3.4): 1 JPEG … 5 GIF.
        let mediaType: UInt8
        let width: UInt32
        let height: UInt32
        /// Milliseconds since 1970; nil when unknown.
        let takenAt: Int64?
        let thumbnail: ThumbnailJSON?
        let latitudeE7: Int32?
        let longitudeE7: Int32?
    }

    /// `POST /api/browser/photos`: the photo of a post the browser is about to sign, with the fields of a new post
    /// (`caption`, `location`, `locationFromPhoto`, `keepMetadata`, `takenAt`). The node checks and keeps it as it
    /// keeps its own, and answers what the post's record says of the photo and its location.
    func stagePhoto(_ request: Request, context: BasicRequestContext) async throws -> Response {
        try await charge(try await session(request), BrowserSessions.photoCost)
        return try await uploads.receive(
            request,
            describing: "the photo as multipart/form-data with fields photo and caption",
            photoMissing: "choose a photo to share (field 'photo')"
        ) { upload, photo in
            let draft = try PostRoutes.newPost(upload, photo: photo)
            let staged = try await UploadReceiver.refusingBadPhotos(upload) {
                try await withInvalidText(field: "caption") { try await actions.stage(draft) }
            }
            let reference = staged.photo
            return try json(
                StagedJSON(
                    sha256: reference.sha256.hex,
                    bytes: reference.byteCount,
                    mediaType: reference.mediaType.rawValue,
                    width: reference.width,
                    height: reference.height,
                    takenAt: reference.takenAt?.milliseconds,
                    thumbnail: reference.thumbnail.map { ThumbnailJSON(sha256: $0.sha256.hex, bytes: $0.byteCount) },
                    latitudeE7: staged.location?.latitudeE7,
                    longitudeE7: staged.location?.longitudeE7
                ),
                status: .created
            )
        }
    }

    struct RecordBodyJSON: Decodable { let record: String }

    struct StoredJSON: Encodable {
        let id: String
        let kind: UInt8
        let author: String
        let sequence: UInt64
    }

    /// `POST /api/browser/records`: a record the browser signed (base64url of its bytes, header and content). Stored
    /// when it is the browser's and extends its log (``ContinuumStore/storeFromDevice(_:device:autoFollow:)``),
    /// then offered to the peers.
    func submit(_ request: Request, context: BasicRequestContext) async throws -> Response {
        let session = try await session(request)
        try await charge(session, BrowserSessions.recordCost)
        let body = try await request.decodeJSON(as: RecordBodyJSON.self, context: context)
        let record = try verified(body.record, field: "record")
        let stored = try await storeSigned(record, device: session.device, guest: session.group != nil)
        return try json(
            StoredJSON(
                id: stored.id.hex,
                kind: stored.header.kindCode,
                author: stored.header.author.hex,
                sequence: stored.header.sequence
            ),
            status: .created
        )
    }
}

extension BrowserRoutes {
    /// Charges a guest's write before it is done; 429 `rate_limited` (with `Retry-After`) over its budget. A linked
    /// phone is its owner's, and is not charged.
    func charge(_ session: BrowserSession, _ cost: Double) async throws {
        guard session.group != nil, let wait = await sessions.charge(session.device, cost) else { return }
        throw Self.rateLimited(wait, "this guest writes faster than the node lets a guest write")
    }

    /// 429 `rate_limited`, with `Retry-After` in whole seconds.
    static func rateLimited(_ wait: Duration, _ what: String) -> APIError {
        let seconds = max(1, Int(wait.components.seconds) + 1)
        var error = APIError(.tooManyRequests, "rate_limited", "\(what); try again in \(seconds) s")
        error.headers[.retryAfter] = "\(seconds)"
        return error
    }

    init(
        _ services: APIServices,
        sessions: BrowserSessions,
        uploads: UploadReceiver,
        configuration: APIConfiguration,
        port: @escaping @Sendable () -> Int
    ) {
        self.init(
            store: services.store,
            actions: services.actions,
            identity: services.identity,
            sessions: sessions,
            uploads: uploads,
            secure: configuration.tls != nil,
            lanURLs: {
                PhoneAccess(
                    host: configuration.host,
                    port: port(),
                    tls: configuration.tls != nil,
                    token: nil,
                    interfaces: PhoneAccess.interfaceAddresses()
                ).urls
            }
        )
    }
}
