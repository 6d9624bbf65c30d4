import Foundation

/// Readers of photo files that share no code with the node's (neither libvips nor exiv2), for tests that check what
/// the node wrote: exiftool (Debian's libimage-exiftool-perl, Perl) for the metadata and Pillow (python3-pil, run by
/// Debian's /usr/bin/python3) for the pixels. scripts/setup.sh installs both.
public enum IndependentReaders {
    /// A reader is missing or failed; the message says which and why.
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// Every tag exiftool finds in a file, as `Group:Tag` → value, with numbers as numbers (`exiftool -json -a -G1
    /// -n`): `IFD0:Orientation` 6, `ExifIFD:DateTimeOriginal`, `GPS:GPSLatitude`, `XMP-photoshop:City`, …
    public static func exiftool(_ file: URL) throws -> [String: Any] {
        let output = try run("/usr/bin/exiftool", ["-json", "-a", "-G1", "-n", file.path])
        guard let list = try JSONSerialization.jsonObject(with: output) as? [[String: Any]], let tags = list.first
        else { throw Failure(description: "exiftool printed no object for \(file.path)") }
        return tags
    }

    /// The tags of ``exiftool(_:)`` that say where a photo was taken: any named GPS, and place names.
    public static func locationTags(_ tags: [String: Any]) -> [String] {
        let places = [
            "city", "state", "country", "countryname", "countrycode", "sub-location", "sublocation",
            "province-state", "locationcreated", "locationshown", "location",
        ]
        return tags.keys.filter { key in
            let name = key.split(separator: ":").last.map { $0.lowercased() } ?? ""
            return key.lowercased().contains("gps") || places.contains(name)
        }.sorted()
    }

    /// Whether Pillow decodes both files to the same mode, size and pixels.
    public static func samePixels(_ a: URL, _ b: URL) throws -> Bool {
        let script = """
            import sys
            from PIL import Image
            a, b = Image.open(sys.argv[1]), Image.open(sys.argv[2])
            print("same" if (a.mode, a.size, a.tobytes()) == (b.mode, b.size, b.tobytes()) else "different")
            """
        let output = try run("/usr/bin/python3", ["-c", script, a.path, b.path])
        return String(decoding: output, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines) == "same"
    }

    private static func run(_ tool: String, _ arguments: [String]) throws -> Data {
        guard FileManager.default.isExecutableFile(atPath: tool) else {
            throw Failure(description: "\(tool) is missing: run scripts/setup.sh")
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw Failure(
                description: "\(tool) \(arguments.last ?? "") failed: \(String(decoding: stderr, as: UTF8.self))"
            )
        }
        return stdout
    }
}
