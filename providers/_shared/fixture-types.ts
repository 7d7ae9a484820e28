/** What the fake upstream recorded, as fixtures see it. */
export interface RecordedRequestView {
  readonly method: string;
  readonly url: string;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly rawHeaders: readonly string[];
  readonly body: Buffer;
}
