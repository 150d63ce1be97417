// Placeholder: replaced by the real door.
export const handler = async (): Promise<unknown> => ({ statusCode: 501 });
