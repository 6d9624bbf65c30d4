import CVips
import Foundation
import Synchronization

/// Why a photo cannot be used: not an image, damaged, or not what was expected. `message` is one line for people.
public struct MediaError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong, for callers that answer differently (the HTTP API: 415 `not_an_image`, 422
    /// `corrupt_image`).
    public enum Kind: Sendable, Hashable {
        /// Not JPEG, PNG, HEIC, WebP or GIF, or a format libvips cannot read.
        case notAnImage
        /// A recognised image whose header or pixels are damaged (truncated, garbage after the header).
        case damaged
        /// The file cannot be read (missing, permissions).
        case unreadable
        /// The photo may say where it was taken, and that cannot be removed without re-encoding it (a HEIC with a GPS
        /// position: exiv2 cannot write HEIC). The message says to pass `--keep-metadata` to post it as it is; the
        /// HTTP API answers 422 `location_not_removable`.
        case locationNotRemovable
        /// Anything else: a thumbnail that breaks a limit, libvips failing to start or to encode.
        case other
    }

    public var kind: Kind
    public var message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public init(_ message: String) { self.init(.other, message) }

    public var description: String { message }
}

/// The process's use of libvips.
///
/// libvips keeps process-wide state: it is initialised once, and its error buffer is shared by every thread.
/// Every call into it goes through ``run(_:)``, which initialises libvips the first time and holds one lock for the
/// call, so an error message read afterwards is the call's own and at most one libvips operation runs at a time
/// (on 2 cores, two at once in one process were measured no faster than one after the other).
/// These are two statics, not an object of our API: `vips_init` is itself process-wide and idempotent.
enum Vips {
    /// Initialises libvips once per process (Swift runs a static's initialiser exactly once, thread-safely).
    /// nil when it worked, else libvips's message.
    private static let initialization: String? = {
        guard cvips_init("continuum-node") == 0 else { return takeError() ?? "libvips could not start" }
        // The operation cache keeps recent results for reuse; photos are each opened once, so it only costs memory.
        vips_cache_set_max(0)
        allowOnlyPhotoLoaders()
        return nil
    }()

    /// The loaders of the formats a post may hold (JPEG, PNG, HEIC, WebP, GIF), by their libvips class names.
    static let photoLoaders = [
        "VipsForeignLoadJpeg", "VipsForeignLoadPng", "VipsForeignLoadHeif", "VipsForeignLoadWebp",
        "VipsForeignLoadNsgif",
    ]

    /// Blocks every other loader: photos come from peers, and a photo is one of those formats, so no other loader
    /// (ImageMagick, PDF, SVG, FITS, OpenSlide, …, most of which libvips marks untrusted) is ever given a peer's
    /// bytes. libvips otherwise asks each loader in turn whether it reads a file, ImageMagick last; for 2 KiB that
    /// are no image that took 40 % of a receiver's CPU (`continuum-bench vs-syncthing --small`).
    private static func allowOnlyPhotoLoaders() {
        vips_operation_block_set("VipsForeignLoad", 1)
        for loader in photoLoaders { vips_operation_block_set(loader, 0) }
    }

    /// Serialises libvips calls (the error buffer is shared); true once the process is ending (``close()``).
    private static let lock = Mutex(false)

    /// Runs `body` alone among libvips calls, with a clean error buffer; libvips starts at the first call. Blocks:
    /// call it off the cooperative pool and off event loops for large images (``ThumbnailService`` does). Throws
    /// once ``close()`` was called.
    static func run<T>(_ body: () throws(MediaError) -> T) throws(MediaError) -> T {
        try lock.withLock { closed throws(MediaError) -> T in
            if closed { throw MediaError("the node is shutting down") }
            if let failure = initialization { throw MediaError("libvips could not start: \(failure)") }
            vips_error_clear()
            defer { vips_error_clear() }
            return try body()
        }
    }

    /// Ends this process's use of libvips: waits for the call under way, if any (starting libvips included), and
    /// refuses every later one. A process calls it before it exits. Starting libvips, and some of its operations,
    /// load libraries with `dlopen`; a `dlopen` on one thread while another runs `exit` re-runs the constructors of
    /// libraries that `exit` has already finalised (glibc's `_dl_fini` clears their "initialised" mark), and
    /// libgomp's then aborts the process (`goacc_register: Assertion '!dispatchers[disp->type]' failed`).
    static func close() {
        lock.withLock { $0 = true }
    }

    /// The error buffer as one line: `VipsJpeg: Premature end of JPEG file\nVipsJpeg: …` becomes
    /// `Premature end of JPEG file; …` (class prefixes dropped, repeats removed). Clears the buffer.
    static func takeError() -> String? {
        guard let raw = vips_error_buffer_copy() else { return nil }
        defer { g_free(raw) }
        return cleanError(String(cString: raw))
    }

    /// libvips's error text, cleaned up for people (see ``takeError()``); nil when there is nothing to say.
    static func cleanError(_ text: String) -> String? {
        var lines: [String] = []
        for line in text.split(whereSeparator: \.isNewline) {
            var line = line.trimmingCharacters(in: .whitespaces)
            // "VipsJpeg: message", "jpegload: message", "vips_image_new_from_file: message"
            if let colon = line.firstIndex(of: ":"),
                !line[..<colon].contains(" "),
                line.index(after: colon) < line.endIndex
            {
                line = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
            // A path libvips quotes is the caller's to show.
            line = line.replacingOccurrences(of: "\"", with: "")
            if !line.isEmpty, !lines.contains(line) { lines.append(line) }
        }
        return lines.isEmpty ? nil : lines.joined(separator: "; ")
    }

    /// The error for a failed call: libvips's message, or `fallback` when it left none.
    static func failure(_ fallback: String) -> MediaError {
        MediaError(takeError() ?? fallback)
    }

    /// A string field of an image's metadata, without the `(…, ASCII, 20 components, 20 bytes)` that libvips adds
    /// to EXIF fields; nil when the image has no such field.
    static func string(_ image: UnsafeMutablePointer<VipsImage>, _ field: String) -> String? {
        guard vips_image_get_typeof(image, field) != 0 else { return nil }
        var value: UnsafePointer<CChar>?
        if vips_image_get_string(image, field, &value) == 0, let value {
            return ExifText.value(String(cString: value))
        }
        return nil
    }

    /// An integer field of an image's metadata; nil when the image has none.
    static func int(_ image: UnsafeMutablePointer<VipsImage>, _ field: String) -> Int? {
        guard vips_image_get_typeof(image, field) != 0 else { return nil }
        var value: Int32 = 0
        guard vips_image_get_int(image, field, &value) == 0 else { return nil }
        return Int(value)
    }
}
