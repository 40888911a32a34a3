// 5. As a configuration file: the YAML reader either gives a document whose every recorded line exists, or a
//    problem on a line that exists; reading the same text twice gives the same answer, and every setting's
//    typed read and the unknown-name check answer without trapping.

func checkConfigText(_ bytes: UnsafeRawBufferPointer) {
    let text = String(decoding: bytes, as: UTF8.self)
    let lineCount = text.split(separator: "\n", omittingEmptySubsequences: false).count
    let first: Result<YAMLDocument, ConfigProblem>
    do {
        first = .success(try YAMLReader.read(text))
    } catch {
        first = .failure(error)
    }
    let again: Result<YAMLDocument, ConfigProblem>
    do {
        again = .success(try YAMLReader.read(text))
    } catch {
        again = .failure(error)
    }
    precondition(first == again, "reading the same text twice gave different answers")
    switch first {
    case .failure(let problem):
        if let line = problem.line { precondition(line >= 1 && line <= lineCount, "a problem on line \(line) of \(lineCount)") }
    case .success(let document):
        for line in document.lineNumbers.values {
            precondition(line >= 1 && line <= lineCount, "a value recorded on line \(line) of \(lineCount)")
        }
        _ = try? SettingNames.checkFile(document)
        let reader = SettingsReader(file: document, environment: { _ in nil })
        for setting in Setting.all where setting.kind != .section {
            _ = try? reader.strings(setting.name)
            _ = try? reader.int(setting.name)
            _ = try? reader.seconds(setting.name)
        }
    }
}
